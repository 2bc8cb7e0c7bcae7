package supervisor

import (
	"testing"

	"github.com/actorlet/actorlet/actors/podactor/fake"
	"github.com/actorlet/actorlet/messages"
)

// A started container also collects the pod's dead sandboxes: a sandbox
// left not ready (an agent killed while creating it) is replaced without any
// container dying, so waiting for a death would keep it forever.
func TestContainerStartedRemovesDeadContainersAndSandboxes(t *testing.T) {
	h := newHarness(t, nil)
	h.addRunning("a")
	eventually(t, "sync", func() bool { return h.syncsOf("a") == 1 })
	h.send(&messages.PodLifecycleEvent{PodUID: "a", Type: messages.ContainerStarted, ContainerID: "c1"})
	eventually(t, "dead containers and sandboxes removed", func() bool {
		c := h.rt.Calls(fake.OpRemoveDeadContainers)
		return len(c) == 1 && c[0].UID == "a"
	})
}
