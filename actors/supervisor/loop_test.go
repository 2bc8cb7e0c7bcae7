package supervisor

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/actors/actorutil/actortest"
	"github.com/actorlet/actorlet/actors/podactor/fake"
	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/test/testutil"
)

func TestAddSortsByCreationTimeBeforeAdmission(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxPods = 1 })
	newer, older := newPod("newer", "newer", 200), newPod("older", "older", 100)
	h.add(newer, older)
	eventually(t, "older pod synced", func() bool { return h.syncsOf("older") > 0 })
	h.waitRejections("newer rejected", 1)
	if r := actortest.Of[*messages.PodRejected](h.status)[0]; r.Pod.UID != "newer" || r.Reason != ReasonOutOfPods {
		t.Fatalf("rejection = %s %s, want newer OutOfpods", r.Pod.UID, r.Reason)
	}
}

func TestAdmissionRejectionsAreNeverRun(t *testing.T) {
	cases := []struct {
		name   string
		pod    func() *v1.Pod
		reason string
	}{
		{"cpu", func() *v1.Pod { return withRequests(newPod("big", "big", 2), "3", "1Mi") }, "OutOfcpu"},
		{"memory", func() *v1.Pod { return withRequests(newPod("big", "big", 2), "1m", "2Gi") }, "OutOfmemory"},
		{"host ports", func() *v1.Pod { return withHostPort(newPod("big", "big", 2), 8080) }, ReasonNodePorts},
		{"node selector", func() *v1.Pod {
			return withNodeSelector(newPod("big", "big", 2), map[string]string{"zone": "b"})
		}, ReasonNodeAffinity},
		{"max pods", func() *v1.Pod { return newPod("big", "big", 2) }, ReasonOutOfPods},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			events := &testutil.Recorder{}
			h := newHarness(t, func(c *Config) {
				c.MaxPods = 2
				c.Allocatable = v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi")}
				c.Recorder = events
			})
			h.add(withHostPort(newPod("first", "first", 1), 8080))
			if tc.reason == ReasonOutOfPods {
				h.add(newPod("second", "second", 1))
			}
			h.add(tc.pod())
			h.waitRejections("rejection", 1)
			r := actortest.Of[*messages.PodRejected](h.status)[0]
			if r.Pod.UID != "big" || r.Reason != tc.reason || r.Message == "" {
				t.Fatalf("rejection = %+v, want big %s", r, tc.reason)
			}
			// As the kubelet, a Warning event with the reason and message.
			if got := events.Events(); len(got) != 1 || got[0].Pod.UID != "big" || got[0].String() != "Warning "+tc.reason+" "+r.Message {
				t.Errorf("events = %q, want one Warning %s for big", got, tc.reason)
			}
			h.send(&messages.PodUpdate{Op: messages.OpUpdate, Pods: []*v1.Pod{tc.pod()}, Source: messages.SourceRemote})
			h.clock.Step(2 * time.Second)
			h.never("a rejected pod runs", func() bool { return h.syncsOf("big") > 0 || h.describe("big").Found })
		})
	}
}

func TestDeleteStartsGracefulTermination(t *testing.T) {
	h := newHarness(t, nil)
	p := h.addSynced("a")
	h.send(&messages.PodUpdate{Op: messages.OpDelete, Pods: []*v1.Pod{deletedPod(p, 7)}, Source: messages.SourceRemote})
	eventually(t, "kill", func() bool { return len(h.killsOf("a")) == 1 })
	if g := h.killsOf("a")[0].Grace; g == nil || *g != 7 {
		t.Fatalf("kill grace = %v, want 7", g)
	}
	eventually(t, "terminated", func() bool { return finished(h, "a") })
	if c, nc := h.counted("a"); c {
		t.Fatalf("a deleted terminated pod still counts on the node: %+v", nc)
	}
}

// A removed pod is killed, forgotten, and purged and cleaned up as soon as
// its worker finished, without waiting for housekeeping.
func TestRemoveKillsForgetsAndPurgesAtOnce(t *testing.T) {
	h := newHarness(t, nil)
	p := h.addSynced("a")
	h.send(&messages.PodUpdate{Op: messages.OpRemove, Pods: []*v1.Pod{p}, Source: messages.SourceRemote})
	eventually(t, "kill", func() bool { return len(h.killsOf("a")) == 1 })
	eventually(t, "probes unregistered", func() bool { return len(actortest.Of[*messages.PodForgotten](h.prober)) >= 1 })
	eventually(t, "worker purged", func() bool { return !h.describe("a").Found })
	eventually(t, "status forgotten", func() bool { return len(actortest.Of[*messages.PodForgotten](h.status)) == 1 })
	eventually(t, "pod cleaned up", func() bool { return h.rt.Count(fake.OpCleanupPod) == 1 })
	if n := h.rt.Count(fake.OpGC); n != 0 {
		t.Fatalf("%d housekeeping passes ran; the purge must not wait for one", n)
	}
	h.housekeep()
	if n := h.rt.Count(fake.OpCleanupPod); n != 1 {
		t.Fatalf("CleanupPod ran %d times, want once", n)
	}
}

func TestReconcileDoesNotSyncOrRestart(t *testing.T) {
	h := newHarness(t, nil)
	// no phase change: no immediate requeue
	p := h.addRunningSynced("a")
	r := p.DeepCopy()
	r.Status.Message = "status only"
	h.send(&messages.PodUpdate{Op: messages.OpReconcile, Pods: []*v1.Pod{r}, Source: messages.SourceRemote})
	h.never("sync on reconcile", func() bool { return h.syncsOf("a") != 1 || h.rt.Count(fake.OpRestartContainer) > 0 })
}

func TestSetSnapshotAddsAndRemoves(t *testing.T) {
	h := newHarness(t, nil)
	a, b := newPod("a", "a", 1), newPod("b", "b", 2)
	h.send(&messages.PodUpdate{Op: messages.OpSet, Pods: []*v1.Pod{a, b}, Source: messages.SourceFile})
	eventually(t, "both synced", func() bool { return h.syncsOf("a") > 0 && h.syncsOf("b") > 0 })
	h.send(&messages.PodUpdate{Op: messages.OpSet, Pods: []*v1.Pod{a}, Source: messages.SourceFile})
	eventually(t, "b killed", func() bool { return len(h.killsOf("b")) == 1 })
	if len(h.killsOf("a")) != 0 {
		t.Fatal("a is still listed and must not be killed")
	}
}

func TestPLEGEventSyncsKnownPodAndContainerDiedRemovesDeadContainers(t *testing.T) {
	h := newHarness(t, nil)
	h.addRunningSynced("a")
	h.send(&messages.PodLifecycleEvent{PodUID: "a", Type: messages.ContainerDied, ContainerID: "c1"})
	eventually(t, "sync on event", func() bool { return h.syncsOf("a") == 2 })
	eventually(t, "dead containers removed", func() bool {
		c := h.rt.Calls(fake.OpRemoveDeadContainers)
		return len(c) == 1 && c[0].UID == "a"
	})
	h.send(&messages.PodLifecycleEvent{PodUID: "unknown", Type: messages.ContainerStarted, ContainerID: "x"})
	h.never("sync of an unknown pod", func() bool { return h.syncsOf("unknown") > 0 || h.describe("unknown").Found })
}

func TestLivenessFailureIsForwardedAndSyncsThePod(t *testing.T) {
	h := newHarness(t, nil)
	h.cache.Set(&cri.PodStatus{ID: "a", ContainerStatuses: []*cri.ContainerStatus{{ID: "c1", Name: "app", State: cri.ContainerStateRunning}}})
	h.addRunningSynced("a")
	h.send(&messages.ProbeResultChanged{PodUID: "a", ContainerName: "app", ContainerID: "c1", Kind: messages.Readiness, Result: messages.ProbeSuccess})
	h.never("sync on readiness", func() bool { return h.syncsOf("a") != 1 })
	h.send(&messages.ProbeResultChanged{PodUID: "a", ContainerName: "app", ContainerID: "c1", Kind: messages.Liveness, Result: messages.ProbeFailure, Message: "timeout"})
	eventually(t, "sync with failed probe", func() bool { return h.syncsOf("a") == 2 })
	if fp := h.rt.Calls(fake.OpSyncPod)[1].FailedProbes; fp["c1"] != "timeout" {
		t.Fatalf("failed probes = %v", fp)
	}
	eventually(t, "status child got both results", func() bool { return len(actortest.Of[*messages.ProbeResultChanged](h.status)) == 2 })
}

func TestPodStatusComputedGoesToStatusAndProber(t *testing.T) {
	h := newHarness(t, nil)
	h.add(newPod("a", "a", 1))
	eventually(t, "status forwarded", func() bool {
		return len(actortest.Of[*messages.PodStatusComputed](h.status)) > 0 && len(actortest.Of[*messages.PodStatusComputed](h.prober)) > 0
	})
}

func TestSyncTickRequeuesDuePods(t *testing.T) {
	h := newHarness(t, nil)
	p := newPod("a", "a", 1)
	h.add(p) // Pending → Running: the phase changes, so it is synced again at once
	eventually(t, "immediate resync after phase change", func() bool { return h.syncsOf("a") == 2 })
	h.clock.Step(time.Second)
	h.never("resync before due", func() bool { return h.syncsOf("a") != 2 })
	h.clock.Step(91 * time.Second) // past the jittered minute
	eventually(t, "periodic resync", func() bool { return h.syncsOf("a") == 3 })
}

func TestSyncErrorIsRetriedAfterBackOff(t *testing.T) {
	h := newHarness(t, nil)
	h.rt.Fail(fake.OpSyncPod, errFake)
	h.addRunningSynced("a")
	h.clock.Step(9 * time.Second)
	h.never("retry before 10 s", func() bool { return h.syncsOf("a") != 1 })
	h.clock.Step(7 * time.Second)
	eventually(t, "retry", func() bool { return h.syncsOf("a") == 2 })
}

func TestOrphansAreKilledOnlyAfterSourcesReady(t *testing.T) {
	h := newHarness(t, nil)
	orphan := &cri.Pod{ID: "orphan", Name: "old", Namespace: "default", Containers: []*cri.Container{{ID: "c", Name: "app", State: cri.ContainerStateRunning}}}
	h.rt.SetPods(orphan)
	if d := h.describe("orphan"); d.Found {
		t.Fatalf("a worker exists for an orphan before housekeeping: %+v", d)
	}
	h.housekeep()
	h.housekeep()
	h.never("orphan killed before sources ready", func() bool { return len(h.killsOf("orphan")) > 0 })
	if n := h.rt.Count(fake.OpGetPods); n != 0 {
		t.Fatalf("runtime listed %d times before sources were ready", n)
	}
	h.send(&messages.SourcesReady{Sources: []string{messages.SourceRemote}})
	h.housekeep()
	eventually(t, "orphan killed", func() bool { return len(h.killsOf("orphan")) == 1 })
	k := h.killsOf("orphan")[0]
	if k.Grace == nil || *k.Grace != 1 || k.Pod != nil || k.Running.ID != "orphan" {
		t.Fatalf("orphan kill = %+v, want grace 1 of the runtime pod", k)
	}
	if n := h.rt.Count(fake.OpSyncPod); n != 0 {
		t.Fatalf("an orphan must only be killed, got %d syncs", n)
	}
}

func TestHousekeepingDoesNotBlockTheLoop(t *testing.T) {
	h := newHarness(t, nil)
	release := h.rt.Hold(fake.OpGetPods)
	defer release()
	h.send(&messages.SourcesReady{})
	h.settle()
	h.clock.Step(2 * time.Second)
	eventually(t, "listing in flight", func() bool { return h.rt.Count(fake.OpGetPods) == 1 })
	h.add(newPod("a", "a", 1))
	eventually(t, "pod synced while housekeeping runs", func() bool { return h.syncsOf("a") > 0 })
	h.clock.Step(2 * time.Second)
	h.never("a second pass while one is in flight", func() bool { return h.rt.Count(fake.OpGetPods) != 1 })
	release()
	eventually(t, "pass finished", func() bool { return h.rt.Count(fake.OpGC) == 1 })
}

func TestStaticPodsRunOnePerFullNameFirstComeFirstServed(t *testing.T) {
	h := newHarness(t, nil)
	a, b, c := static(newPod("s1", "etcd", 1)), static(newPod("s2", "etcd", 2)), static(newPod("s3", "etcd", 3))
	h.add(a)
	eventually(t, "first runs", func() bool { return h.syncsOf("s1") > 0 })
	h.add(b)
	h.add(c)
	h.never("others start while the first runs", func() bool { return h.syncsOf("s2")+h.syncsOf("s3") > 0 })
	h.send(&messages.PodUpdate{Op: messages.OpRemove, Pods: []*v1.Pod{a}, Source: messages.SourceFile})
	eventually(t, "second starts after the first finished", func() bool { return h.syncsOf("s2") > 0 })
	h.never("third waits", func() bool { return h.syncsOf("s3") > 0 })
	h.send(&messages.PodUpdate{Op: messages.OpRemove, Pods: []*v1.Pod{b}, Source: messages.SourceFile})
	eventually(t, "third starts", func() bool { return h.syncsOf("s3") > 0 })
}

func TestPodAddedAgainWhileTerminatingRestartsAfterPurge(t *testing.T) {
	h := newHarness(t, nil)
	p := h.addSynced("a")
	release := h.rt.Hold(fake.OpKillPod)
	h.send(&messages.PodUpdate{Op: messages.OpRemove, Pods: []*v1.Pod{p}, Source: messages.SourceRemote})
	eventually(t, "kill in flight", func() bool { return len(h.killsOf("a")) == 1 })
	syncs := h.syncsOf("a")
	h.add(p)
	eventually(t, "restart requested", func() bool { return h.describe("a").RestartRequested })
	release()
	eventually(t, "finished", func() bool { return finished(h, "a") })
	h.never("sync before purge", func() bool { return h.syncsOf("a") != syncs })
	h.housekeep()
	eventually(t, "new worker syncs", func() bool { return h.syncsOf("a") > syncs })
	if d := h.describe("a"); d.WorkType != messages.SyncWork || d.RestartRequested {
		t.Fatalf("new worker = %+v, want a fresh syncing worker", d)
	}
}

func TestFinishedPodStaysDoneWhileStillListed(t *testing.T) {
	h := newHarness(t, nil)
	h.addFinished("a")
	h.housekeep()
	h.housekeep()
	// Still desired: the worker stays finished (not purged), its terminal
	// status is not forgotten, and updates are ignored.
	if d := h.describe("a"); !d.Found || d.WorkType != messages.TerminatedWork {
		t.Fatalf("a finished pod still listed must keep its finished worker, got %+v", d)
	}
	if n := len(actortest.Of[*messages.PodForgotten](h.status)); n != 0 {
		t.Fatalf("status of a finished pod still listed was forgotten (%d times)", n)
	}
	h.send(&messages.PodUpdate{Op: messages.OpUpdate, Pods: []*v1.Pod{newPod("a", "a", 1)}, Source: messages.SourceRemote})
	h.clock.Step(2 * time.Second)
	h.never("a done pod runs again", func() bool { return h.syncsOf("a") > 0 })
	// Once its source removes it, it is purged and forgotten.
	h.send(&messages.PodUpdate{Op: messages.OpRemove, Pods: []*v1.Pod{newPod("a", "a", 1)}, Source: messages.SourceRemote})
	h.housekeep()
	eventually(t, "purged after REMOVE", func() bool { return !h.describe("a").Found })
	eventually(t, "forgotten after REMOVE", func() bool { return len(actortest.Of[*messages.PodForgotten](h.status)) == 1 })
}

func TestTerminatePodEvictsWithReason(t *testing.T) {
	h := newHarness(t, nil)
	h.add(newPod("a", "a", 1))
	eventually(t, "sync", func() bool { return h.syncsOf("a") > 0 })
	h.send(&messages.TerminatePod{UID: "a", Options: messages.KillOptions{GracePeriodSecondsOverride: int64p(3), Evict: true, Reason: "Evicted", Message: "disk pressure"}})
	eventually(t, "finished", func() bool { return finished(h, "a") })
	if g := h.killsOf("a")[0].Grace; *g != 3 {
		t.Fatalf("grace = %d, want 3", *g)
	}
	eventually(t, "final status", func() bool {
		st := actortest.Of[*messages.PodStatusComputed](h.status)
		last := st[len(st)-1].Status
		return last.Phase == v1.PodFailed && last.Reason == "Evicted" && last.Message == "disk pressure"
	})
	if c, nc := h.counted("a"); c {
		t.Fatalf("an evicted terminated pod still counts on the node: %+v", nc)
	}
}

func TestRestartPodIsForwarded(t *testing.T) {
	h := newHarness(t, nil)
	h.cache.Set(&cri.PodStatus{ID: "a", ContainerStatuses: []*cri.ContainerStatus{{ID: "c1", Name: "app", State: cri.ContainerStateRunning}}})
	h.add(newPod("a", "a", 1))
	eventually(t, "sync", func() bool { return h.syncsOf("a") > 0 })
	h.send(&messages.RestartPod{UID: "a"})
	eventually(t, "container killed", func() bool { return h.rt.Count(fake.OpRestartContainer) == 1 })
}

func TestNodeConditionsAndDescribe(t *testing.T) {
	h := newHarness(t, nil)
	nc := h.ask(&messages.GetNodeConditions{}).(*messages.NodeConditions)
	if nc.RuntimeReady || !nc.PLEGHealthy {
		t.Fatalf("initial conditions = %+v, want runtime not ready yet, PLEG healthy", nc)
	}
	h.send(&messages.RuntimeHealthChanged{Ready: true})
	h.send(&messages.RelistHealthChanged{Healthy: false, Message: "relist stuck"})
	h.add(newPod("a", "a", 1))
	eventually(t, "sync", func() bool { return h.syncsOf("a") > 0 })
	nc = h.ask(&messages.GetNodeConditions{}).(*messages.NodeConditions)
	if !nc.RuntimeReady || nc.PLEGHealthy || nc.PLEGMessage != "relist stuck" || nc.RunningPods != 1 || len(nc.Pods) != 1 {
		t.Fatalf("conditions = %+v", nc)
	}
	if d := h.describe("nope"); d.Found {
		t.Fatalf("describe of an unknown UID = %+v, want Found=false", d)
	}
	if d := h.describe("a"); !d.Found || d.FullName != "default/a" {
		t.Fatalf("describe = %+v", d)
	}
}

func TestUpdateDispatchesTheNewSpecToTheWorker(t *testing.T) {
	h := newHarness(t, nil)
	p := h.addRunningSynced("a")
	u := p.DeepCopy()
	u.Generation = 2
	h.send(&messages.PodUpdate{Op: messages.OpUpdate, Pods: []*v1.Pod{u}, Source: messages.SourceRemote})
	eventually(t, "sync of the update", func() bool { return h.syncsOf("a") == 2 })
	if g := h.rt.Calls(fake.OpSyncPod)[1].Pod.Generation; g != 2 {
		t.Fatalf("synced generation %d, want 2", g)
	}
}

// TestNodeLabelsChangedAdmitsNewPods: after an operator labels the node,
// a pod selecting the new label is admitted; the one rejected before stays
// rejected, as the kubelet never re-admits a rejected pod.
func TestNodeLabelsChangedAdmitsNewPods(t *testing.T) {
	h := newHarness(t, nil)
	before := withNodeSelector(newPod("before", "before", 1), map[string]string{"disktype": "ssd"})
	h.add(before)
	h.waitRejections("rejection", 1)
	if r := actortest.Of[*messages.PodRejected](h.status)[0]; r.Reason != ReasonNodeAffinity {
		t.Fatalf("rejection = %+v, want NodeAffinity", r)
	}
	h.send(&messages.NodeLabelsChanged{Labels: map[string]string{"zone": "a", "disktype": "ssd"}})
	after := withNodeSelector(newPod("after", "after", 2), map[string]string{"disktype": "ssd", "zone": "a"})
	h.add(after)
	eventually(t, "sync of the pod admitted on the new label", func() bool { return h.syncsOf("after") > 0 })
	h.add(before) // sent again: still rejected
	gone := withNodeSelector(newPod("gone", "gone", 3), map[string]string{"disktype": "ssd"})
	h.send(&messages.NodeLabelsChanged{Labels: map[string]string{"zone": "a"}})
	h.add(gone)
	h.waitRejections("rejection on the removed label", 2)
	if h.syncsOf("before") != 0 || h.syncsOf("gone") != 0 || h.syncsOf("after") == 0 {
		t.Fatalf("syncs: before %d, gone %d, after %d", h.syncsOf("before"), h.syncsOf("gone"), h.syncsOf("after"))
	}
}

// A rejected pod deleted gracefully has nothing to stop: its Failed
// status goes out again with the deletion, so that it is finalized at once.
func TestDeletingARejectedPodRepublishesItsStatus(t *testing.T) {
	h := newHarness(t, nil)
	p := withNodeSelector(newPod("a", "a", 1), map[string]string{"zone": "b"})
	h.add(p)
	h.waitRejections("rejection", 1)
	del := p.DeepCopy()
	now := metav1.Now()
	grace := int64(30)
	del.DeletionTimestamp, del.DeletionGracePeriodSeconds = &now, &grace
	h.send(&messages.PodUpdate{Op: messages.OpDelete, Pods: []*v1.Pod{del}, Source: messages.SourceRemote})
	h.waitRejections("rejection with the deletion", 2)
	r := actortest.Of[*messages.PodRejected](h.status)[1]
	if r.Pod.DeletionTimestamp == nil || r.Reason != ReasonNodeAffinity || r.Message == "" || h.syncsOf("a") != 0 {
		t.Fatalf("second rejection %+v (syncs %d): want the deleting pod, NodeAffinity, a message, no sync", r, h.syncsOf("a"))
	}
}

func TestRemovingARejectedPodDropsItsStatus(t *testing.T) {
	h := newHarness(t, nil)
	p := withNodeSelector(newPod("a", "a", 1), map[string]string{"zone": "b"})
	h.add(p)
	h.waitRejections("rejection", 1)
	h.send(&messages.PodUpdate{Op: messages.OpRemove, Pods: []*v1.Pod{p}, Source: messages.SourceRemote})
	eventually(t, "status forgotten", func() bool { return len(actortest.Of[*messages.PodForgotten](h.status)) == 1 })
}

// A status a worker computed just before it was purged reaches the loop
// after the pod was forgotten: it must not bring the pod's status back.
func TestLateStatusAfterPurgeIsDropped(t *testing.T) {
	h := newHarness(t, nil)
	p := h.addSynced("a")
	h.send(&messages.PodUpdate{Op: messages.OpRemove, Pods: []*v1.Pod{p}, Source: messages.SourceRemote})
	// The removed pod's final status is not published, whether it arrives
	// before or after the purge: the pod is gone from its source and must
	// not come back into view.
	before := len(actortest.Of[*messages.PodStatusComputed](h.status))
	h.send(&messages.PodStatusComputed{Pod: p, Status: v1.PodStatus{Phase: v1.PodFailed}})
	h.never("status of a removed pod forwarded", func() bool { return len(actortest.Of[*messages.PodStatusComputed](h.status)) != before })
	eventually(t, "forgotten", func() bool { return len(actortest.Of[*messages.PodForgotten](h.status)) == 1 })
	h.send(&messages.PodStatusComputed{Pod: p, Status: v1.PodStatus{Phase: v1.PodFailed}})
	h.never("late status forwarded", func() bool { return len(actortest.Of[*messages.PodStatusComputed](h.status)) != before })
}

// A mass deletion is cleaned up several pods at a time, not one pod after
// another: every purged pod's CleanupPod is in flight at once here.
func TestPurgedPodsAreCleanedUpInParallel(t *testing.T) {
	h := newHarness(t, nil)
	var pods []*v1.Pod
	for _, uid := range []string{"a", "b", "c"} {
		pods = append(pods, newPod(uid, uid, 1))
	}
	h.add(pods...)
	for _, p := range pods {
		eventually(t, "sync", func() bool { return h.syncsOf(p.UID) > 0 })
	}
	release := h.rt.Hold(fake.OpCleanupPod)
	defer release()
	h.send(&messages.PodUpdate{Op: messages.OpRemove, Pods: pods, Source: messages.SourceRemote})
	eventually(t, "three cleanups in flight together", func() bool { return h.rt.Count(fake.OpCleanupPod) == 3 })
}

// A pod that finished and is then deleted gracefully (issue 22) is
// published with the deletion, so the status owner finalizes it; its
// removal that follows purges it and cleans it up at once.
func TestFinishedPodDeletedIsPublishedThenPurgedOnRemove(t *testing.T) {
	h := newHarness(t, nil)
	p := h.addFinished("a")
	h.send(&messages.PodUpdate{Op: messages.OpDelete, Pods: []*v1.Pod{deletedPod(p, 30)}, Source: messages.SourceRemote})
	eventually(t, "the deletion published", func() bool {
		for _, m := range actortest.Of[*messages.PodStatusComputed](h.status) {
			if m.Pod.DeletionTimestamp != nil && m.Status.Phase == v1.PodSucceeded {
				return true
			}
		}
		return false
	})
	h.send(&messages.PodUpdate{Op: messages.OpRemove, Pods: []*v1.Pod{deletedPod(p, 0)}, Source: messages.SourceRemote})
	eventually(t, "worker purged", func() bool { return !h.describe("a").Found })
	eventually(t, "status forgotten", func() bool { return len(actortest.Of[*messages.PodForgotten](h.status)) == 1 })
	eventually(t, "pod cleaned up", func() bool { return h.rt.Count(fake.OpCleanupPod) == 1 })
	if n := h.rt.Count(fake.OpGC); n != 0 {
		t.Fatalf("%d housekeeping passes ran; the purge must not wait for one", n)
	}
}

// A finished pod removed and added again under the same UID (a static
// manifest put back, a fleet pod whose selector matches again) runs again,
// once the removed pod's cleanup is over.
func TestFinishedPodRemovedAndAddedAgainRunsAfterCleanup(t *testing.T) {
	h := newHarness(t, nil)
	p := h.addFinished("a")
	release := h.rt.Hold(fake.OpCleanupPod)
	h.rt.SetPhase("a", v1.PodRunning)
	h.send(&messages.PodUpdate{Op: messages.OpRemove, Pods: []*v1.Pod{p}, Source: messages.SourceRemote})
	h.add(p)
	eventually(t, "cleanup in flight", func() bool { return h.rt.Count(fake.OpCleanupPod) == 1 })
	h.never("a start during the cleanup", func() bool { return h.syncsOf("a") > 0 })
	release()
	eventually(t, "the pod runs again", func() bool { return h.syncsOf("a") > 0 })
	if d := h.describe("a"); d.WorkType != messages.SyncWork || d.RestartRequested {
		t.Fatalf("new worker = %+v, want a fresh syncing worker", d)
	}
}

// A pod removed and added again under the same UID while its worker is
// still stopping (an operator's re-apply of a pod being deleted) starts a
// new life once the old worker is gone: the status and prober actors forget
// the UID first, so the old worker's terminal status does not stick to the
// new run.
func TestPodAddedAgainWhileStoppingIsForgottenBeforeItRunsAgain(t *testing.T) {
	h := newHarness(t, nil)
	p := h.addSynced("a")
	release := h.rt.Hold(fake.OpKillPod)
	h.send(&messages.PodUpdate{Op: messages.OpDelete, Pods: []*v1.Pod{deletedPod(p, 30)}, Source: messages.SourceRemote})
	eventually(t, "kill in flight", func() bool { return len(h.killsOf("a")) == 1 })
	syncs := h.syncsOf("a")
	h.send(&messages.PodUpdate{Op: messages.OpRemove, Pods: []*v1.Pod{deletedPod(p, 0)}, Source: messages.SourceRemote})
	h.add(p)
	h.never("forgotten while the old worker stops", func() bool {
		return len(actortest.Of[*messages.PodForgotten](h.status)) > 0
	})
	release()
	eventually(t, "old worker finished", func() bool { return finished(h, "a") })
	h.housekeep()
	eventually(t, "the pod runs again", func() bool { return h.syncsOf("a") > syncs })
	forgotten := actortest.Of[*messages.PodForgotten](h.status)
	if len(forgotten) != 1 || forgotten[0].UID != "a" {
		t.Fatalf("status actor told %+v, want the UID forgotten once", forgotten)
	}
	if got := actortest.Of[*messages.PodForgotten](h.prober); len(got) == 0 {
		t.Fatal("prober not told to forget the UID")
	}
}

// NodeConditions names the desired pods whose work is over (what the
// eviction manager's reclaim may remove): a finished pod, not a running
// one, nor one removed whose cleanup is in flight.
func TestNodeConditionsNameTerminatedPods(t *testing.T) {
	h := newHarness(t, nil)
	h.rt.SetPhase("done", v1.PodSucceeded)
	done := jobPod(newPod("done", "done", 1))
	h.add(done)
	h.addRunning("running")
	eventually(t, "finished", func() bool { return finished(h, "done") })
	eventually(t, "running synced", func() bool { return h.syncsOf("running") > 0 })
	nc := h.ask(&messages.GetNodeConditions{}).(*messages.NodeConditions)
	if !slices.Equal(nc.Terminated, []types.UID{"done"}) {
		t.Fatalf("terminated = %v, want the finished pod only", nc.Terminated)
	}
	release := h.rt.Hold(fake.OpCleanupPod)
	defer release()
	h.send(&messages.PodUpdate{Op: messages.OpRemove, Pods: []*v1.Pod{done}, Source: messages.SourceRemote})
	eventually(t, "cleanup in flight", func() bool { return h.rt.Count(fake.OpCleanupPod) == 1 })
	if nc := h.ask(&messages.GetNodeConditions{}).(*messages.NodeConditions); len(nc.Terminated) != 0 {
		t.Fatalf("terminated during the removed pod's cleanup = %v, want none", nc.Terminated)
	}
}
