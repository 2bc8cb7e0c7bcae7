package supervisor

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/actors/podactor/fake"
	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages"
)

// A started container also collects the pod's dead sandboxes: a sandbox
// left not ready (an agent killed while creating it) is replaced without any
// container dying, so waiting for a death would keep it forever.
func TestContainerStartedRemovesDeadContainersAndSandboxes(t *testing.T) {
	h := newHarness(t, nil)
	h.addRunningSynced("a")
	h.send(&messages.PodLifecycleEvent{PodUID: "a", Type: messages.ContainerStarted, ContainerID: "c1"})
	eventually(t, "dead containers and sandboxes removed", func() bool {
		c := h.rt.Calls(fake.OpRemoveDeadContainers)
		return len(c) == 1 && c[0].UID == "a"
	})
}

// A container start in a pod the cache shows with one sandbox and only
// running containers has nothing to collect: no RemoveDeadContainers (two
// list calls per pod at every pod's first start). A second sandbox, or an
// exited container, still collects.
func TestContainerStartedSkipsCollectionWhenNothingIsDead(t *testing.T) {
	h := newHarness(t, nil)
	sandbox := func(id string) *runtimeapi.PodSandboxStatus { return &runtimeapi.PodSandboxStatus{Id: id} }
	running := &cri.ContainerStatus{ID: "c1", Name: "app", State: cri.ContainerStateRunning}
	h.cache.Set(&cri.PodStatus{ID: "a", SandboxStatuses: []*runtimeapi.PodSandboxStatus{sandbox("s1")}, ContainerStatuses: []*cri.ContainerStatus{running}})
	p := newPod("a", "a", 1)
	p.Status.Phase = v1.PodRunning
	h.add(p)
	eventually(t, "sync", func() bool { return h.syncsOf("a") == 1 })
	h.send(&messages.PodLifecycleEvent{PodUID: "a", Type: messages.ContainerStarted, ContainerID: "c1"})
	eventually(t, "sync on the start", func() bool { return h.syncsOf("a") == 2 })
	h.never("collection with nothing dead", func() bool { return len(h.rt.Calls(fake.OpRemoveDeadContainers)) > 0 })

	h.cache.Set(&cri.PodStatus{ID: "a", SandboxStatuses: []*runtimeapi.PodSandboxStatus{sandbox("s2"), sandbox("s1")}, ContainerStatuses: []*cri.ContainerStatus{running}})
	h.send(&messages.PodLifecycleEvent{PodUID: "a", Type: messages.ContainerStarted, ContainerID: "c1"})
	eventually(t, "collection after a replaced sandbox", func() bool { return len(h.rt.Calls(fake.OpRemoveDeadContainers)) == 1 })

	h.cache.Set(&cri.PodStatus{ID: "a", SandboxStatuses: []*runtimeapi.PodSandboxStatus{sandbox("s1")}, ContainerStatuses: []*cri.ContainerStatus{running,
		{ID: "c0", Name: "app", State: cri.ContainerStateExited}}})
	h.send(&messages.PodLifecycleEvent{PodUID: "a", Type: messages.ContainerStarted, ContainerID: "c1"})
	eventually(t, "collection with an exited container", func() bool { return len(h.rt.Calls(fake.OpRemoveDeadContainers)) == 2 })
}

// The deaths of a removed pod's kill collect nothing: the cleanup after the
// kill removes all of it.
func TestContainerDiedOfARemovedPodLeavesCollectionToCleanup(t *testing.T) {
	h := newHarness(t, nil)
	p := h.addSynced("a")
	release := h.rt.Hold(fake.OpKillPod)
	defer release()
	h.send(&messages.PodUpdate{Op: messages.OpRemove, Pods: []*v1.Pod{p}, Source: messages.SourceRemote})
	eventually(t, "kill", func() bool { return len(h.killsOf("a")) == 1 })
	h.send(&messages.PodLifecycleEvent{PodUID: "a", Type: messages.ContainerDied, ContainerID: "c1"})
	h.never("collection during the kill of a removed pod", func() bool { return len(h.rt.Calls(fake.OpRemoveDeadContainers)) > 0 })
	release()
	eventually(t, "cleanup after the kill", func() bool { return h.rt.Count(fake.OpCleanupPod) == 1 })
}
