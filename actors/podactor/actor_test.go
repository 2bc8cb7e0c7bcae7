package podactor

import (
	"errors"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/actors/podactor/fake"
	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages"
)

func TestCreateWaitsForFreshCacheThenSyncsAndReports(t *testing.T) {
	h := newHarness(t, "u1")
	h.send(upd(messages.SyncPodCreate, testPod("u1", 1, nil)))
	eventually(t, "a sync completion", func() bool { return len(messagesOf[*messages.PodSyncCompleted](h)) == 1 })
	if n := h.rt.Count(fake.OpSyncPod); n != 1 {
		t.Fatalf("SyncPod calls = %d, want 1", n)
	}
	if mt := h.cache.MinTimes("u1"); len(mt) != 1 || !mt[0].IsZero() {
		t.Fatalf("first sync must wait for any cached status, minTimes = %v", mt)
	}
	st := messagesOf[*messages.PodStatusComputed](h)
	if len(st) != 1 || st[0].Status.Phase != v1.PodRunning {
		t.Fatalf("PodStatusComputed = %+v, want one Running", st)
	}
	// Pending → Running is a phase change: requeue at once.
	if c := messagesOf[*messages.PodSyncCompleted](h)[0]; c.RequeueAfter != 0 || c.Err != "" {
		t.Fatalf("completion = %+v, want immediate requeue without error", c)
	}
	h.secondSyncWaitsForTheFirst()
	if c := messagesOf[*messages.PodSyncCompleted](h)[1]; c.RequeueAfter < time.Minute || c.RequeueAfter >= 90*time.Second {
		t.Fatalf("healthy resync requeue = %v, want in [1m, 1.5m)", c.RequeueAfter)
	}
}

func TestUpdatesCoalesceWhileSyncRuns(t *testing.T) {
	h := newHarness(t, "u1")
	release := h.rt.Hold(fake.OpSyncPod)
	h.send(upd(messages.SyncPodCreate, testPod("u1", 1, nil)))
	eventually(t, "sync in flight", func() bool { return h.rt.Count(fake.OpSyncPod) == 1 })
	for gen := int64(2); gen <= 5; gen++ {
		h.send(upd(messages.SyncPodUpdate, testPod("u1", gen, nil)))
	}
	if d := h.describe(); !d.Working || d.PendingUpdate == "" {
		t.Fatalf("describe = %+v, want working with one pending update", d)
	}
	release()
	eventually(t, "two completions", func() bool { return len(messagesOf[*messages.PodSyncCompleted](h)) == 2 })
	calls := h.rt.Calls(fake.OpSyncPod)
	if len(calls) != 2 || calls[1].Pod.Generation != 5 {
		t.Fatalf("SyncPod calls = %d (last gen %d), want 2 with the latest update (gen 5)", len(calls), calls[len(calls)-1].Pod.Generation)
	}
}

func TestPendingKillIsNotOverwrittenByLaterUpdate(t *testing.T) {
	h := newHarness(t, "u1")
	release := h.rt.Hold(fake.OpSyncPod)
	defer release()
	h.send(upd(messages.SyncPodCreate, testPod("u1", 1, nil)))
	eventually(t, "sync in flight", func() bool { return h.rt.Count(fake.OpSyncPod) == 1 })
	relKill := h.rt.Hold(fake.OpKillPod)
	h.send(&messages.SyncPod{UpdateType: messages.SyncPodKill, Pod: testPod("u1", 1, nil)})
	h.send(upd(messages.SyncPodUpdate, testPod("u1", 2, nil)))
	eventually(t, "kill in flight", func() bool { return h.rt.Count(fake.OpKillPod) == 1 })
	relKill()
	eventually(t, "finished", func() bool { return slices.Contains(h.states(), "finished") })
	if n := h.rt.Count(fake.OpSyncPod); n != 1 {
		t.Fatalf("SyncPod calls = %d: the update after the kill must not sync", n)
	}
}

func TestStatesAreOneWaySyncTerminatingTerminatedFinished(t *testing.T) {
	h := newHarness(t, "u1")
	p := testPod("u1", 1, int64p(30))
	h.send(upd(messages.SyncPodCreate, p))
	eventually(t, "first sync", func() bool { return h.rt.Count(fake.OpSyncPod) == 1 })
	h.send(upd(messages.SyncPodUpdate, deleted(p, 20)))
	eventually(t, "finished", func() bool { return slices.Contains(h.states(), "finished") })
	if got, want := h.states(), []string{"terminating", "terminated", "finished"}; !slices.Equal(got, want) {
		t.Fatalf("states = %v, want %v", got, want)
	}
	if k := h.rt.Calls(fake.OpKillPod); len(k) != 1 || graceOf(k[0]) != "20" {
		t.Fatalf("KillPod calls = %+v, want one with the deletion grace 20", k)
	}
	st := messagesOf[*messages.PodStatusComputed](h)
	if last := st[len(st)-1]; last.Status.Phase != v1.PodFailed {
		t.Fatalf("final status phase = %s, want Failed for a deleted running pod", last.Status.Phase)
	}
	// A finished worker ignores every update, even a sync back to running.
	h.send(upd(messages.SyncPodUpdate, p))
	h.send(upd(messages.SyncPodSync, p))
	h.never("work after finished", func() bool {
		return h.rt.Count(fake.OpSyncPod) != 1 || h.rt.Count(fake.OpKillPod) != 1 || len(h.states()) != 3
	})
	if d := h.describe(); d.WorkType != messages.TerminatedWork {
		t.Fatalf("describe work type = %v, want terminated", d.WorkType)
	}
}

func TestBecomingTerminatingCancelsSyncInFlight(t *testing.T) {
	h := newHarness(t, "u1")
	h.rt.Hold(fake.OpSyncPod) // never released: only cancellation ends it
	p := testPod("u1", 1, nil)
	h.send(upd(messages.SyncPodCreate, p))
	eventually(t, "sync in flight", func() bool { return h.rt.Count(fake.OpSyncPod) == 1 })
	h.send(upd(messages.SyncPodUpdate, deleted(p, 5)))
	eventually(t, "sync canceled", func() bool {
		c := h.rt.Calls(fake.OpSyncPod)[0]
		return c.Returned && errors.Is(c.Err, errCanceled)
	})
	eventually(t, "kill", func() bool { return h.rt.Count(fake.OpKillPod) == 1 })
	if g := graceOf(h.rt.Calls(fake.OpKillPod)[0]); g != "5" {
		t.Fatalf("kill grace = %s, want 5", g)
	}
}

func TestShorterGracePeriodCancelsKillAndGraceOnlyShortens(t *testing.T) {
	h := newHarness(t, "u1")
	release := h.rt.Hold(fake.OpKillPod)
	p := testPod("u1", 1, int64p(60))
	h.send(upd(messages.SyncPodCreate, p))
	eventually(t, "sync", func() bool { return h.rt.Count(fake.OpSyncPod) == 1 })
	h.send(&messages.SyncPod{UpdateType: messages.SyncPodKill, Pod: p, KillOptions: &messages.KillOptions{GracePeriodSecondsOverride: int64p(20)}})
	eventually(t, "first kill", func() bool { return h.rt.Count(fake.OpKillPod) == 1 })
	// A longer grace period changes nothing.
	h.send(&messages.SyncPod{UpdateType: messages.SyncPodKill, Pod: p, KillOptions: &messages.KillOptions{GracePeriodSecondsOverride: int64p(40)}})
	h.never("restart for a longer grace", func() bool { return h.rt.Count(fake.OpKillPod) != 1 })
	if d := h.describe(); d.GracePeriod == nil || *d.GracePeriod != 20 {
		t.Fatalf("grace = %v, want 20", d.GracePeriod)
	}
	// A shorter one cancels the kill in flight and runs it again.
	h.send(upd(messages.SyncPodUpdate, deleted(p, 5)))
	eventually(t, "second kill", func() bool { return h.rt.Count(fake.OpKillPod) == 2 })
	kills := h.rt.Calls(fake.OpKillPod)
	if !kills[0].Returned || !errors.Is(kills[0].Err, errCanceled) || graceOf(kills[0]) != "20" || graceOf(kills[1]) != "5" {
		t.Fatalf("kills = %+v, want the 20 s kill canceled then a 5 s kill", kills)
	}
	release()
	eventually(t, "finished", func() bool { return slices.Contains(h.states(), "finished") })
}

func TestCreateWhileTerminatingSetsRestartRequested(t *testing.T) {
	h := newHarness(t, "u1")
	release := h.rt.Hold(fake.OpKillPod)
	p := testPod("u1", 1, nil)
	h.send(upd(messages.SyncPodCreate, p))
	h.send(&messages.SyncPod{UpdateType: messages.SyncPodKill, Pod: p})
	eventually(t, "kill", func() bool { return h.rt.Count(fake.OpKillPod) == 1 })
	h.send(upd(messages.SyncPodCreate, testPod("u1", 2, nil)))
	eventually(t, "restart requested", func() bool {
		s := messagesOf[*messages.PodWorkerStateChanged](h)
		return len(s) > 0 && s[len(s)-1].RestartRequested
	})
	if d := h.describe(); !d.RestartRequested || d.PendingUpdate != "" {
		t.Fatalf("describe = %+v: the create must only set restartRequested", d)
	}
	release()
	eventually(t, "finished", func() bool { return slices.Contains(h.states(), "finished") })
	if n := h.rt.Count(fake.OpSyncPod); n > 1 {
		t.Fatalf("SyncPod calls = %d: the create while terminating must not sync", n)
	}
}

func TestTerminalPodOnFirstSightStartsNothing(t *testing.T) {
	h := newHarness(t, "u1")
	h.cache.Set(&cri.PodStatus{ID: "u1", ContainerStatuses: []*cri.ContainerStatus{{ID: "c1", Name: "app", State: cri.ContainerStateExited}}})
	p := testPod("u1", 1, nil)
	p.Status.Phase = v1.PodSucceeded
	h.rt.SetPhase("u1", v1.PodPending) // what a runtime without containers would derive
	h.send(upd(messages.SyncPodCreate, p))
	eventually(t, "finished", func() bool { return slices.Contains(h.states(), "finished") })
	if n := h.rt.Count(""); n != 0 {
		t.Fatalf("runtime calls = %+v, want none", h.rt.Calls(""))
	}
	st := messagesOf[*messages.PodStatusComputed](h)
	if len(st) != 1 || st[0].Status.Phase != v1.PodSucceeded {
		t.Fatalf("statuses = %+v, want one final Succeeded", st)
	}
}

// A pod whose status is already terminal (the last published one, from
// before an agent restart) while something of it still runs is torn down,
// never synced, as the kubelet's pod workers do; its final status keeps the
// phase and reason it had, whatever the runtime's containers say.
func TestTerminalPodOnFirstSightWithSomethingRunningIsKilled(t *testing.T) {
	h := newHarness(t, "u1")
	h.cache.Set(&cri.PodStatus{ID: "u1", ContainerStatuses: []*cri.ContainerStatus{{ID: "c1", Name: "app", State: cri.ContainerStateRunning}}})
	p := testPod("u1", 1, nil) // restartPolicy Always: the runtime says Running
	p.Status = v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted", Message: "node pressure"}
	h.send(upd(messages.SyncPodCreate, p))
	if last := killedWithoutSync(t, h); last.Phase != v1.PodFailed || last.Reason != "Evicted" || last.Message != "node pressure" {
		t.Fatalf("final status %s %q %q, want Failed Evicted", last.Phase, last.Reason, last.Message)
	}
}

func TestTerminalPhaseFromRuntimeTerminatesWithoutSyncing(t *testing.T) {
	h := newHarness(t, "u1")
	h.rt.SetPhase("u1", v1.PodSucceeded)
	p := testPod("u1", 1, nil)
	p.Spec.RestartPolicy = v1.RestartPolicyNever // a pod that may succeed
	h.send(upd(messages.SyncPodCreate, p))
	if last := killedWithoutSync(t, h); last.Phase != v1.PodSucceeded {
		t.Fatalf("final phase = %s, want Succeeded", last.Phase)
	}
}

// killedWithoutSync waits until the worker finished having killed the pod
// once and never synced it, and returns its final status.
func killedWithoutSync(t *testing.T, h *harness) v1.PodStatus {
	t.Helper()
	eventually(t, "finished", func() bool { return slices.Contains(h.states(), "finished") })
	if n := h.rt.Count(fake.OpSyncPod); n != 0 {
		t.Fatalf("SyncPod calls = %d, want none for a terminal pod", n)
	}
	if n := h.rt.Count(fake.OpKillPod); n != 1 {
		t.Fatalf("KillPod calls = %d, want 1", n)
	}
	st := messagesOf[*messages.PodStatusComputed](h)
	return st[len(st)-1].Status
}

func TestOrphanIsOnlyKilledWithGraceOneSecond(t *testing.T) {
	h := newHarness(t, "orphan")
	running := &cri.Pod{ID: "orphan", Name: "old", Namespace: "default", Containers: []*cri.Container{{ID: "c1", Name: "app", State: cri.ContainerStateRunning}}}
	h.send(&messages.SyncPod{UpdateType: messages.SyncPodSync, RunningPod: running})
	eventually(t, "finished", func() bool { return slices.Contains(h.states(), "finished") })
	kills := h.rt.Calls(fake.OpKillPod)
	if len(kills) != 1 || graceOf(kills[0]) != "1" || kills[0].Running != running || kills[0].Pod != nil {
		t.Fatalf("kills = %+v, want one of the running pod with grace 1", kills)
	}
	if n := h.rt.Count(fake.OpSyncPod); n != 0 {
		t.Fatalf("an orphan must never be synced, got %d SyncPod", n)
	}
}

func TestEvictedPodEndsFailedWithReason(t *testing.T) {
	h := newHarness(t, "u1")
	p := testPod("u1", 1, nil)
	h.send(upd(messages.SyncPodCreate, p))
	h.send(&messages.SyncPod{UpdateType: messages.SyncPodKill, Pod: p, KillOptions: &messages.KillOptions{Evict: true, Reason: "Evicted", Message: "low memory", GracePeriodSecondsOverride: int64p(2)}})
	eventually(t, "finished", func() bool { return slices.Contains(h.states(), "finished") })
	st := messagesOf[*messages.PodStatusComputed](h)
	last := st[len(st)-1].Status
	if last.Phase != v1.PodFailed || last.Reason != "Evicted" || last.Message != "low memory" {
		t.Fatalf("final status = %s/%s/%s, want Failed/Evicted/low memory", last.Phase, last.Reason, last.Message)
	}
	if g := graceOf(h.rt.Calls(fake.OpKillPod)[0]); g != "2" {
		t.Fatalf("kill grace = %s, want 2", g)
	}
}

func TestSyncErrorRetriesInTenSecondsJittered(t *testing.T) {
	h := newHarness(t, "u1")
	h.rt.Fail(fake.OpSyncPod, errors.New("image pull failed"))
	p := testPod("u1", 1, nil)
	p.Status.Phase = v1.PodRunning
	h.send(upd(messages.SyncPodCreate, p))
	eventually(t, "completion", func() bool { return len(messagesOf[*messages.PodSyncCompleted](h)) == 1 })
	c := messagesOf[*messages.PodSyncCompleted](h)[0]
	if c.Err == "" || c.RequeueAfter < 10*time.Second || c.RequeueAfter >= 15*time.Second {
		t.Fatalf("completion = %+v, want an error and requeue in [10s, 15s)", c)
	}
	if d := h.describe(); d.LastSyncError == "" {
		t.Fatal("describe must show the last sync error")
	}
}

func TestLivenessFailureIsPassedToSyncPodUntilContainerChanges(t *testing.T) {
	h := newHarness(t, "u1")
	p := h.createRunning()
	h.send(&messages.ProbeResultChanged{PodUID: "u1", ContainerName: "app", ContainerID: "c1", Kind: messages.Liveness, Result: messages.ProbeFailure, Message: "HTTP 500"})
	eventually(t, "sync on probe failure", func() bool { return len(messagesOf[*messages.PodSyncCompleted](h)) == 2 })
	if fp := h.rt.Calls(fake.OpSyncPod)[1].FailedProbes; fp["c1"] != "HTTP 500" {
		t.Fatalf("failedProbes = %v, want c1 → HTTP 500", fp)
	}
	// The runtime replaced the container: the failure is forgotten.
	h.cache.Set(&cri.PodStatus{ID: "u1", ContainerStatuses: []*cri.ContainerStatus{{ID: "c2", Name: "app", State: cri.ContainerStateRunning}}})
	h.send(upd(messages.SyncPodSync, p))
	eventually(t, "third sync", func() bool { return len(messagesOf[*messages.PodSyncCompleted](h)) == 3 })
	h.send(upd(messages.SyncPodSync, p))
	eventually(t, "fourth sync", func() bool { return len(messagesOf[*messages.PodSyncCompleted](h)) == 4 })
	if fp := h.rt.Calls(fake.OpSyncPod)[3].FailedProbes; len(fp) != 0 {
		t.Fatalf("failedProbes after the container changed = %v, want none", fp)
	}
	// Readiness changes do not sync.
	h.send(&messages.ProbeResultChanged{PodUID: "u1", ContainerName: "app", ContainerID: "c2", Kind: messages.Readiness, Result: messages.ProbeFailure})
	h.never("sync on readiness", func() bool { return h.rt.Count(fake.OpSyncPod) != 4 })
}

func TestRestartPodKillsContainersThenSyncs(t *testing.T) {
	h := newHarness(t, "u1")
	h.cache.Set(&cri.PodStatus{ID: "u1", ContainerStatuses: []*cri.ContainerStatus{
		{ID: "c1", Name: "app", State: cri.ContainerStateRunning},
		{ID: "c2", Name: "sidecar", State: cri.ContainerStateRunning},
	}})
	h.send(upd(messages.SyncPodCreate, testPod("u1", 1, nil)))
	eventually(t, "first sync", func() bool { return h.rt.Count(fake.OpSyncPod) == 1 })
	h.send(&messages.RestartPod{UID: "u1", Container: "sidecar"})
	eventually(t, "second sync", func() bool { return h.rt.Count(fake.OpSyncPod) == 2 })
	var all []fake.Call // the calls that act; status reads aside
	for _, c := range h.rt.Calls("") {
		if c.Op != fake.OpGetPodStatus {
			all = append(all, c)
		}
	}
	if k := h.rt.Calls(fake.OpRestartContainer); len(k) != 1 || k[0].ContainerID != "c2" {
		t.Fatalf("RestartContainer calls = %+v, want c2 only", k)
	}
	if all[len(all)-2].Op != fake.OpRestartContainer || all[len(all)-1].Op != fake.OpSyncPod {
		t.Fatalf("calls = %+v, want RestartContainer then SyncPod", all)
	}
	h.send(&messages.RestartPod{UID: "u1"})
	eventually(t, "third sync", func() bool { return h.rt.Count(fake.OpSyncPod) == 3 })
	if n := h.rt.Count(fake.OpRestartContainer); n != 3 {
		t.Fatalf("RestartContainer calls = %d, want 3 after restarting all", n)
	}
}

func TestPanicRestartsActorWhichAsksForDesiredPodAndResyncs(t *testing.T) {
	h := newHarness(t, "u1")
	p := testPod("u1", 1, nil)
	h.mu.Lock()
	h.desired = &messages.DesiredPod{Found: true, Update: *upd(messages.SyncPodCreate, p), ActorRestarts: 1}
	h.mu.Unlock()
	h.rt.Panic(fake.OpSyncPod, 1)
	h.send(upd(messages.SyncPodCreate, p))
	eventually(t, "resync after restart", func() bool {
		c := h.rt.Calls(fake.OpSyncPod)
		return len(c) == 2 && c[1].Returned
	})
	h.mu.Lock()
	asked := h.desiredRequests
	h.mu.Unlock()
	if asked != 1 {
		t.Fatalf("GetDesiredPod requests = %d, want 1", asked)
	}
	if d := h.describe(); d.ActorRestarts != 1 || d.WorkType != messages.SyncWork {
		t.Fatalf("describe = %+v, want 1 restart, syncing", d)
	}
}

// The reported work duration is the runtime work, not the wait for fresh
// PLEG status before it (the kubelet's pod_worker_duration_seconds likewise
// starts inside SyncPod).
func TestWorkDurationExcludesTheWaitForFreshStatus(t *testing.T) {
	h := newHarness(t, "u1")
	release := h.cache.Hold()
	h.send(upd(messages.SyncPodCreate, testPod("u1", 1, nil)))
	eventually(t, "the worker waiting for status", func() bool { return len(h.cache.MinTimes("u1")) == 1 })
	h.clock.Step(30 * time.Second) // time spent waiting for PLEG
	release()
	eventually(t, "a sync completion", func() bool { return len(messagesOf[*messages.PodSyncCompleted](h)) == 1 })
	if d := messagesOf[*messages.PodSyncCompleted](h)[0].Duration; d >= 30*time.Second {
		t.Fatalf("Duration = %s includes the wait for fresh status", d)
	}
}

// runningWithKillHeld starts pod u1 (grace seconds) on a new harness and
// waits for its first status; the runtime holds every KillPod until
// release, which t.Cleanup calls too.
func runningWithKillHeld(t *testing.T, grace *int64) (*harness, *v1.Pod, func()) {
	t.Helper()
	h := newHarness(t, "u1")
	release := h.rt.Hold(fake.OpKillPod)
	t.Cleanup(release)
	p := testPod("u1", 1, grace)
	h.send(upd(messages.SyncPodCreate, p))
	eventually(t, "running status", func() bool { return len(messagesOf[*messages.PodStatusComputed](h)) == 1 })
	return h, p, release
}

// A graceful delete is reported at once (the pod with its deletion
// timestamp and its last status), not only when the kill, which may take
// the whole grace period, finishes.
func TestDeletionIsReportedBeforeTheKillEnds(t *testing.T) {
	h, p, _ := runningWithKillHeld(t, int64p(60))
	h.send(upd(messages.SyncPodUpdate, deleted(p, 30)))
	eventually(t, "kill in flight", func() bool { return h.rt.Count(fake.OpKillPod) == 1 })
	eventually(t, "deletion reported while the kill runs", func() bool {
		st := messagesOf[*messages.PodStatusComputed](h)
		last := st[len(st)-1]
		return last.Pod.DeletionTimestamp != nil && last.Status.Phase == v1.PodRunning
	})
}

// A sidecar's startup success syncs the pod and is passed to SyncPod (the
// next container may start); a regular container's does not sync.
func TestSidecarStartupSuccessSyncsAndIsPassed(t *testing.T) {
	h := newHarness(t, "u1")
	h.cache.Set(&cri.PodStatus{ID: "u1", ContainerStatuses: []*cri.ContainerStatus{{ID: "s1", Name: "proxy", State: cri.ContainerStateRunning}}})
	p := testPod("u1", 1, nil)
	always := v1.ContainerRestartPolicyAlways
	p.Spec.InitContainers = []v1.Container{{Name: "proxy", Image: "envoy", RestartPolicy: &always}}
	h.send(upd(messages.SyncPodCreate, p))
	eventually(t, "first sync", func() bool { return len(messagesOf[*messages.PodSyncCompleted](h)) == 1 })
	h.send(&messages.ProbeResultChanged{PodUID: "u1", ContainerName: "proxy", ContainerID: "containerd://s1", Kind: messages.Startup, Result: messages.ProbeSuccess})
	eventually(t, "sync on the sidecar's startup success", func() bool { return len(messagesOf[*messages.PodSyncCompleted](h)) == 2 })
	if st := h.rt.Calls(fake.OpSyncPod)[1].Started; !st["s1"] {
		t.Fatalf("started = %v, want s1", st)
	}
	h.send(&messages.ProbeResultChanged{PodUID: "u1", ContainerName: p.Spec.Containers[0].Name, ContainerID: "c1", Kind: messages.Startup, Result: messages.ProbeSuccess})
	h.never("sync on a regular container's startup success", func() bool { return h.rt.Count(fake.OpSyncPod) != 2 })
}

// The final status of a killed pod is read from the runtime, not waited for
// in the PLEG cache: the kill changed the runtime, and the cache would show
// it only at its next inspection or freshness tick.
func TestFinalStatusIsReadFromTheRuntimeAfterTheKill(t *testing.T) {
	h, p, release := runningWithKillHeld(t, int64p(1))
	h.send(upd(messages.SyncPodKill, p))
	eventually(t, "kill in flight", func() bool { return h.rt.Count(fake.OpKillPod) == 1 })
	hold := h.cache.Hold() // the cache never becomes fresher than the kill
	defer hold()
	reads := h.rt.Count(fake.OpGetPodStatus)
	release()
	eventually(t, "finished", func() bool {
		s := h.states()
		return len(s) > 0 && s[len(s)-1] == "finished"
	})
	if h.rt.Count(fake.OpGetPodStatus) == reads {
		t.Fatal("the final status was not read from the runtime")
	}
}

// A finished worker still takes a later deletion (issue 22): the deleted
// pod is published with its final status, so the status entry shows the
// deletion and the deleted pod is finalized; nothing runs again.
func TestFinishedWorkerPublishesALaterDeletion(t *testing.T) {
	h, p := completed(t)
	calls := h.rt.Count("")
	h.send(upd(messages.SyncPodUpdate, deleted(p, 30)))
	eventually(t, "the deletion published", func() bool {
		st := messagesOf[*messages.PodStatusComputed](h)
		return st[len(st)-1].Pod.DeletionTimestamp != nil
	})
	st := messagesOf[*messages.PodStatusComputed](h)
	if last := st[len(st)-1]; last.Status.Phase != v1.PodSucceeded {
		t.Fatalf("published phase = %s, want the final Succeeded", last.Status.Phase)
	}
	// The same pod again changes nothing: it is not published twice.
	h.send(upd(messages.SyncPodSync, deleted(p, 30)))
	h.never("work or a second publication after finished", func() bool {
		return h.rt.Count("") != calls || len(h.states()) != 3 || len(messagesOf[*messages.PodStatusComputed](h)) != len(st)
	})
}

// A Create for a finished UID (the pod added again) requests a restart, as
// while terminating; the worker itself starts nothing.
func TestCreateAfterFinishedRequestsRestart(t *testing.T) {
	h, _ := completed(t)
	calls := h.rt.Count("")
	h.send(upd(messages.SyncPodCreate, testPod("u1", 2, nil)))
	eventually(t, "restart requested", func() bool {
		s := messagesOf[*messages.PodWorkerStateChanged](h)
		return s[len(s)-1].Finished && s[len(s)-1].RestartRequested
	})
	h.never("work after finished", func() bool { return h.rt.Count("") != calls })
}

// completed runs pod u1 until its worker finished with the pod Succeeded.
func completed(t *testing.T) (*harness, *v1.Pod) {
	t.Helper()
	h := newHarness(t, "u1")
	h.rt.SetPhase("u1", v1.PodSucceeded)
	p := testPod("u1", 1, nil)
	p.Spec.RestartPolicy = v1.RestartPolicyNever // a pod that may succeed
	h.send(upd(messages.SyncPodCreate, p))
	eventually(t, "finished", func() bool { return slices.Contains(h.states(), "finished") })
	return h, p
}

// A sync that changed the pod reads the runtime after its changes and hands
// that status to the PLEG cache (whose relist then need not read it again);
// the next sync still waits for status newer than this sync's end.
func TestSyncRecordsItsOwnReadInTheCache(t *testing.T) {
	h := newHarness(t, "u1")
	h.cache.Set(&cri.PodStatus{ID: "u1", ContainerStatuses: []*cri.ContainerStatus{{ID: "c1", Name: "app", State: cri.ContainerStateRunning}}})
	h.rt.SetPhase("u1", v1.PodPending) // not steady: the sync reads again
	h.send(upd(messages.SyncPodCreate, testPod("u1", 1, nil)))
	eventually(t, "a sync completion", func() bool { return len(messagesOf[*messages.PodSyncCompleted](h)) == 1 })
	if n := h.rt.Count(fake.OpGetPodStatus); n != 1 {
		t.Fatalf("GetPodStatus calls = %d, want the one read after the sync", n)
	}
	obs := h.cache.ObservedStatuses("u1")
	if len(obs) != 1 || obs[0].FindContainerStatusByID("c1") == nil {
		t.Fatalf("statuses the sync recorded in the cache = %+v, want its read after the sync", obs)
	}
	h.secondSyncWaitsForTheFirst()
}
