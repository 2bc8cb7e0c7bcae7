package publish

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/messages/wire/busauth"
)

// The publisher finalizes a deleted remote pod once its published status
// shows it terminated, and nothing else: not while it runs, not a static
// pod, not a pod without a deletion timestamp.
func TestFinalizeOnlyTerminatedDeletedRemotePods(t *testing.T) {
	_, _, p := startStatusPublisher(t)
	finalized := make(chan string, 10)
	p.FinalizeWith(func(_ context.Context, pod *v1.Pod) error { finalized <- pod.Name; return nil })

	now := metav1.Now()
	pod := func(name, source string, deleting bool, phase v1.PodPhase, running bool) *v1.Pod {
		p := statusPod(name, types.UID("uid-"+name), phase, "")
		p.Annotations = map[string]string{messages.ConfigSourceAnnotation: source}
		if deleting {
			p.DeletionTimestamp = &now
		}
		st := v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0}}
		if running {
			st = v1.ContainerState{Running: &v1.ContainerStateRunning{}}
		}
		p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "app", State: st}}
		return p
	}
	for _, c := range []*v1.Pod{
		pod("running", messages.SourceRemote, true, v1.PodRunning, true),
		pod("static", messages.SourceFile, true, v1.PodSucceeded, false),
		pod("not-deleted", messages.SourceRemote, false, v1.PodSucceeded, false),
		pod("stopped", messages.SourceRemote, true, v1.PodRunning, false),
		pod("failed", messages.SourceRemote, true, v1.PodFailed, true),
	} {
		p.PodStatusChanged(messages.PodStatusChanged{Pod: c})
	}
	got := map[string]bool{}
	timeout := time.After(5 * time.Second)
	for len(got) < 2 {
		select {
		case n := <-finalized:
			got[n] = true
		case <-timeout:
			t.Fatalf("finalized %v, want stopped and failed", got)
		}
	}
	if !got["stopped"] || !got["failed"] {
		t.Fatalf("finalized %v, want stopped and failed", got)
	}
	select {
	case n := <-finalized:
		t.Fatalf("also finalized %q", n)
	case <-time.After(200 * time.Millisecond):
	}
}

// PruneStale deletes only the entries of this node's pods of the source
// that are not kept; DeleteIf only what matches.
func TestPruneStaleAndDeleteIf(t *testing.T) {
	js, kv, p := startStatusPublisher(t)
	ctx := context.Background()
	// The node lists its entries through the status consumer an operator
	// provisions for it (docs/security.md).
	if _, err := js.CreateConsumer(ctx, busauth.StatusStream, busauth.NodeConsumers(testNode)[busauth.StatusStream]); err != nil {
		t.Fatal(err)
	}
	write := func(node, name, source, reason string) {
		t.Helper()
		other := &StatusPublisher{js: js, node: node}
		pod := statusPod(name, "", v1.PodFailed, "")
		pod.Status.Reason = reason
		pod.Annotations = map[string]string{messages.ConfigSourceAnnotation: source}
		if err := other.WriteNow(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	write(testNode, "gone", messages.SourceRemote, "")
	write(testNode, "kept", messages.SourceRemote, "")
	write(testNode, "static", messages.SourceFile, "")
	write("other", "gone", messages.SourceRemote, "")
	keep := []wire.PodRef{{Namespace: "default", Name: "kept"}}
	if !p.PruneStale(ctx, messages.SourceRemote, keep) {
		t.Error("PruneStale reported an incomplete prune")
	}
	if getPod(t, kv, "gone") != nil {
		t.Error("stale remote status kept")
	}
	if getPod(t, kv, "kept") == nil || getPod(t, kv, "static") == nil {
		t.Error("a kept or static status was pruned")
	}
	if _, err := kv.Get(ctx, wire.StatusKey("other", "default", "gone")); err != nil {
		t.Errorf("another node's status was pruned: %v", err)
	}

	isFailedValidation := func(pod *v1.Pod) bool { return pod.Status.Reason == "FailedValidation" }
	if p.DeleteIf(ctx, "default", "kept", isFailedValidation) || getPod(t, kv, "kept") == nil {
		t.Error("DeleteIf deleted a status that does not match")
	}
	write(testNode, "rejected", messages.SourceRemote, "FailedValidation")
	if !p.DeleteIf(ctx, "default", "rejected", isFailedValidation) || getPod(t, kv, "rejected") != nil {
		t.Error("DeleteIf kept a matching status")
	}

	// A stale entry that cannot be read, or a listing that fails (no
	// status consumer for the node), leaves the prune incomplete.
	if _, err := kv.Put(ctx, wire.StatusKey(testNode, "default", "garbage"), []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	if p.PruneStale(ctx, messages.SourceRemote, keep) {
		t.Error("PruneStale reported a complete prune with an entry it could not read")
	}
	unprovisioned := newPublisher(t, StatusConfig{JS: js, NodeName: "unprovisioned"})
	if unprovisioned.PruneStale(ctx, messages.SourceRemote, nil) {
		t.Error("PruneStale reported a complete prune without the node's status consumer")
	}
}

// Read returns the pod of a status entry, nil for none, and an error naming
// the key for an entry that is not a pod.
func TestReadStatusEntry(t *testing.T) {
	_, kv, p := startStatusPublisher(t)
	ctx := t.Context()

	if got, err := p.Read(ctx, "default", "none"); got != nil || err != nil {
		t.Fatalf("Read of a missing entry = %v, %v; want nil, nil", got, err)
	}
	if err := p.WriteNow(ctx, statusPod("done", "uid-done", v1.PodFailed, "Evicted")); err != nil {
		t.Fatal(err)
	}
	got, err := p.Read(ctx, "default", "done")
	if err != nil || got == nil || got.UID != "uid-done" || got.Status.Phase != v1.PodFailed {
		t.Fatalf("Read = %+v, %v; want the written pod", got, err)
	}
	key := wire.StatusKey(testNode, "default", "garbage")
	if _, err := kv.Put(ctx, key, []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	if got, err := p.Read(ctx, "default", "garbage"); got != nil || err == nil || !strings.Contains(err.Error(), key) {
		t.Fatalf("Read of a garbage entry = %v, %v; want an error naming %q", got, err, key)
	}
}
