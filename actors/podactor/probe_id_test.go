package podactor

import (
	"testing"

	"github.com/actorlet/actorlet/actors/podactor/fake"
	"github.com/actorlet/actorlet/messages"
)

// Probe results carry the API form of the container ID (as in
// v1.ContainerStatus: "<runtime>://<id>"); SyncPod and the runtime status
// use the runtime's ID. The failure must reach SyncPod under the runtime ID
// and stay there while that instance runs.
func TestLivenessFailureWithAPIContainerIDReachesSyncPod(t *testing.T) {
	h := newHarness(t, "u1")
	p := h.createRunning()

	h.send(&messages.ProbeResultChanged{PodUID: "u1", ContainerName: "app", ContainerID: "actorlet-process://c1",
		Kind: messages.Liveness, Result: messages.ProbeFailure, Message: "exited with 1"})
	eventually(t, "sync on probe failure", func() bool { return len(messagesOf[*messages.PodSyncCompleted](h)) == 2 })
	if fp := h.rt.Calls(fake.OpSyncPod)[1].FailedProbes; fp["c1"] != "exited with 1" {
		t.Fatalf("failedProbes = %v, want c1 → exited with 1", fp)
	}
	// The same instance still runs: the failure is not forgotten.
	h.send(upd(messages.SyncPodSync, p))
	eventually(t, "third sync", func() bool { return len(messagesOf[*messages.PodSyncCompleted](h)) == 3 })
	if fp := h.rt.Calls(fake.OpSyncPod)[2].FailedProbes; fp["c1"] != "exited with 1" {
		t.Fatalf("failedProbes on the next sync = %v, want c1 still failed", fp)
	}
}
