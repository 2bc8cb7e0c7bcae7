package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/messages/seconds"
	"github.com/actorlet/actorlet/test/testutil"
)

func i64(v int64) *int64 { return &v }

func TestKillPodGracePeriods(t *testing.T) {
	tests := []struct {
		name     string
		mutate   func(p *v1.Pod)
		override *int64
		want     int64
	}{
		{"default 30 s", func(*v1.Pod) {}, nil, 30},
		{"spec", func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = i64(12) }, nil, 12},
		{"deletion grace wins over spec", func(p *v1.Pod) {
			p.Spec.TerminationGracePeriodSeconds = i64(12)
			p.DeletionGracePeriodSeconds = i64(5)
		}, nil, 5},
		{"override wins", func(p *v1.Pod) { p.DeletionGracePeriodSeconds = i64(5) }, i64(2), 2},
		{"minimum 2 s without override", func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = i64(0) }, nil, 2},
		{"override may be shorter than 2 s", func(*v1.Pod) {}, i64(0), 0},
		{"a huge grace is clamped, not overflowed", func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = i64(math.MaxInt64) }, nil, seconds.MaxSeconds},
		{"the first overflowing grace", func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = i64(9223372037) }, nil, seconds.MaxSeconds},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			pod := newPod("web", "app")
			tt.mutate(pod)
			if err := e.sync(t, pod, nil).Error(); err != nil {
				t.Fatal(err)
			}
			pods, err := e.m.GetPods(context.Background(), false)
			if err != nil || len(pods) != 1 {
				t.Fatalf("GetPods = %v, %v", pods, err)
			}
			if err := e.m.KillPod(context.Background(), pod, pods[0], tt.override); err != nil {
				t.Fatalf("KillPod: %v", err)
			}
			id := pods[0].Containers[0].ID
			if got, _ := e.rt.stopTimeout(id); got != tt.want {
				t.Errorf("StopContainer timeout = %d, want %d", got, tt.want)
			}
			if n := e.rt.count("StopPodSandbox"); n != 1 {
				t.Errorf("StopPodSandbox calls = %d, want 1", n)
			}
			if pods, _ := e.m.GetPods(context.Background(), false); len(pods) != 0 {
				t.Errorf("running pods after KillPod: %d", len(pods))
			}
		})
	}
}

func TestKillPodRunsPreStopFirst(t *testing.T) {
	e := newEnv(t)
	pod := drainPod()
	if err := e.sync(t, pod, nil).Error(); err != nil {
		t.Fatal(err)
	}
	pods, _ := e.m.GetPods(context.Background(), false)
	if err := e.m.KillPod(context.Background(), pod, pods[0], nil); err != nil {
		t.Fatal(err)
	}
	calls := e.rt.FakeRuntimeService.GetCalls()
	exec, stop := -1, -1
	for i, c := range calls {
		if c == "ExecSync" && exec < 0 {
			exec = i
		}
		if c == "StopContainer" && stop < 0 {
			stop = i
		}
	}
	if exec < 0 || stop < exec {
		t.Errorf("calls %v: want ExecSync (preStop) before StopContainer", calls)
	}
	e.rec.Expect(t, "Killing")
}

func TestKillOrphanPod(t *testing.T) {
	e := newEnv(t)
	pod := drainPod()
	pod.Spec.TerminationGracePeriodSeconds = i64(60)
	if err := e.sync(t, pod, nil).Error(); err != nil {
		t.Fatal(err)
	}
	pods, _ := e.m.GetPods(context.Background(), false)
	orphan := pods[0]
	if orphan.Name != "web" || orphan.Namespace != "default" || orphan.ID != pod.UID {
		t.Errorf("runtime pod identity = %s/%s %s", orphan.Namespace, orphan.Name, orphan.ID)
	}
	// No spec: grace 1 s, and the preStop hook restored from annotations.
	if err := e.m.KillPod(context.Background(), nil, orphan, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.rt.stopTimeout(orphan.Containers[0].ID); got != 2 {
		t.Errorf("orphan stop timeout = %d, want 2 (1 s grace raised to the minimum)", got)
	}
	if e.rt.count("ExecSync") != 1 {
		t.Error("orphan preStop hook did not run")
	}
}

func TestKillPodHonoursCancellation(t *testing.T) {
	e := newEnv(t)
	pod := newPod("web", "app")
	pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 600}}}
	cancel, done := e.startKill(t, pod)
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Error("canceled KillPod returned nil")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("KillPod did not return after cancellation")
	}
}

func TestRemoveDeadContainersAndCleanup(t *testing.T) {
	e := newEnv(t)
	e.m.opts.KeepDeadContainers = 1
	pod := newPod("web", "app")
	if err := e.sync(t, pod, nil).Error(); err != nil {
		t.Fatal(err)
	}
	// Four deaths → five instances, four dead; the newest running.
	for range 4 {
		st, _ := e.status(t, pod)
		e.rt.exitContainer(t, st.FindContainerStatusByName("app").ID, 1, e.clock.Now())
		e.clock.Step(10 * time.Minute)
		if err := e.sync(t, pod, nil).Error(); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(e.rt.containerIDs("app")); n != 5 {
		t.Fatalf("instances = %d, want 5", n)
	}
	if err := e.m.RemoveDeadContainers(context.Background(), pod.UID); err != nil {
		t.Fatal(err)
	}
	st, api := e.status(t, pod)
	if n := len(st.ContainerStatuses); n != 2 {
		t.Errorf("instances after GC = %d, want 2 (running + 1 dead)", n)
	}
	if api.ContainerStatuses[0].RestartCount != 4 || api.ContainerStatuses[0].LastTerminationState.Terminated == nil {
		t.Errorf("status after GC = %+v", api.ContainerStatuses[0])
	}

	if err := e.m.CleanupPod(context.Background(), pod.UID); err != nil {
		t.Fatal(err)
	}
	all, _ := e.m.GetPods(context.Background(), true)
	if len(all) != 0 {
		t.Errorf("runtime pods after cleanup = %d", len(all))
	}
	if len(e.m.BackOffs(pod.UID)) != 0 {
		t.Error("back-offs survived cleanup")
	}
	e.rt.FakeRuntimeService.Lock()
	n := len(e.rt.Sandboxes)
	e.rt.FakeRuntimeService.Unlock()
	if n != 0 {
		t.Errorf("sandboxes after cleanup = %d", n)
	}
}

func TestSandboxChangedEvent(t *testing.T) {
	e := newEnv(t)
	pod := newPod("web", "app")
	if err := e.sync(t, pod, nil).Error(); err != nil {
		t.Fatal(err)
	}
	e.rt.FakeRuntimeService.Lock()
	for _, s := range e.rt.Sandboxes {
		s.State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	}
	e.rt.FakeRuntimeService.Unlock()
	res := e.sync(t, pod, nil)
	if err := res.Error(); err != nil || !res.SandboxCreated || !res.PodKilled {
		t.Fatalf("result = %+v, err %v", res, err)
	}
	e.rec.Expect(t, "SandboxChanged")
	st, _ := e.status(t, pod)
	if st.SandboxStatuses[0].Metadata.Attempt != 1 {
		t.Errorf("new sandbox attempt = %d, want 1", st.SandboxStatuses[0].Metadata.Attempt)
	}
}

// A preStop sleep and a grace period of 9223372037 s or more overflowed
// time.Duration to a negative one: an hour later (or at once, on a real
// clock) the hook was over and the container stopped. Clamped, both last
// until the kill is canceled.
func TestKillPodHugePreStopAndGraceDoNotOverflow(t *testing.T) {
	e := newEnv(t)
	pod := newPod("web", "app")
	pod.Spec.TerminationGracePeriodSeconds = i64(math.MaxInt64)
	pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 9223372037}}}
	cancel, done := e.startKill(t, pod)
	testutil.Until(t, 5*time.Second, "the preStop hook and its grace timer waiting", func() bool { return e.clock.Waiters() >= 2 })
	e.clock.Step(time.Hour)
	select {
	case err := <-done:
		t.Fatalf("KillPod returned (%v) an hour into a grace period of MaxInt64 seconds", err)
	case <-time.After(time.Second):
	}
	cancel()
	if err := <-done; err == nil {
		t.Error("canceled KillPod returned nil")
	}
	if n := e.rt.count("StopContainer"); n != 0 {
		t.Errorf("StopContainer called %d times during the preStop hook, want 0", n)
	}
}

// startKill runs pod, then kills it in the background with a context
// cancel cancels; done delivers KillPod's result.
func (e *env) startKill(t *testing.T, pod *v1.Pod) (cancel context.CancelFunc, done <-chan error) {
	t.Helper()
	if err := e.sync(t, pod, nil).Error(); err != nil {
		t.Fatal(err)
	}
	pods, _ := e.m.GetPods(context.Background(), false)
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	go func() { result <- e.m.KillPod(ctx, pod, pods[0], nil) }()
	return cancel, result
}

// Cleanup after a kill removes each sandbox with one call: the kill stopped
// it, and the sandbox takes its containers with it. A sandbox still ready
// (no kill ran) is stopped first.
func TestCleanupPodRemovesStoppedSandboxesWithOneCall(t *testing.T) {
	for _, killed := range []bool{true, false} {
		t.Run(fmt.Sprintf("killed=%v", killed), func(t *testing.T) {
			e := newEnv(t)
			pod := newPod("web", "app", "side")
			if err := e.sync(t, pod, nil).Error(); err != nil {
				t.Fatal(err)
			}
			if killed {
				pods, _ := e.m.GetPods(context.Background(), false)
				if err := e.m.KillPod(context.Background(), pod, pods[0], nil); err != nil {
					t.Fatal(err)
				}
			}
			stops, removes := e.rt.count("StopPodSandbox"), e.rt.count("RemoveContainer")
			if err := e.m.CleanupPod(context.Background(), pod.UID); err != nil {
				t.Fatal(err)
			}
			wantStops := 1
			if killed {
				wantStops = 0
			}
			if n := e.rt.count("StopPodSandbox") - stops; n != wantStops {
				t.Errorf("StopPodSandbox calls by cleanup = %d, want %d", n, wantStops)
			}
			if n := e.rt.count("RemoveContainer") - removes; n != 0 {
				t.Errorf("RemoveContainer calls by cleanup = %d, want 0 (removed with the sandbox)", n)
			}
			if n := e.rt.count("RemovePodSandbox"); n != 1 {
				t.Errorf("RemovePodSandbox calls = %d, want 1", n)
			}
			if all, _ := e.m.GetPods(context.Background(), true); len(all) != 0 {
				t.Errorf("runtime pods after cleanup = %d", len(all))
			}
		})
	}
}

// A StopContainer that fails while the container exited anyway (containerd
// 1.6: "ttrpc: closed" when the shim goes away during the kill) is a kill
// done; while the container still runs it is an error.
func TestKillPodStopErrorOnAnExitedContainerIsDone(t *testing.T) {
	for _, exited := range []bool{true, false} {
		t.Run(fmt.Sprintf("exited=%v", exited), func(t *testing.T) {
			e := newEnv(t)
			pod := newPod("web", "app")
			if err := e.sync(t, pod, nil).Error(); err != nil {
				t.Fatal(err)
			}
			pods, _ := e.m.GetPods(context.Background(), false)
			st, _ := e.status(t, pod)
			if exited {
				e.rt.exitContainer(t, st.FindContainerStatusByName("app").ID, 0, e.clock.Now())
			}
			e.rt.FakeRuntimeService.InjectError("StopContainer", errors.New("failed to kill container: ttrpc: closed: unknown"))
			err := e.m.KillPod(context.Background(), pod, pods[0], nil)
			if exited && err != nil {
				t.Fatalf("KillPod = %v, want nil: the container exited", err)
			}
			if !exited && err == nil {
				t.Fatal("KillPod = nil, want the StopContainer error: the container still runs")
			}
		})
	}
}
