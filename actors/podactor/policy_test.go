package podactor

import (
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages"
)

func TestCoalesceKeepsLatestUpdateAndEarliestStartTime(t *testing.T) {
	t0, t1, t2 := time.Unix(10, 0), time.Unix(20, 0), time.Unix(30, 0)
	p1, p2 := testPod("u", 1, nil), testPod("u", 2, nil)
	kill := &messages.KillOptions{Evict: true, Reason: "Evicted"}
	cases := []struct {
		name      string
		pending   *messages.SyncPod
		next      *messages.SyncPod
		wantType  messages.UpdateType
		wantGen   int64
		wantStart time.Time
		wantKill  *messages.KillOptions
	}{
		{"no pending takes next", nil, &messages.SyncPod{UpdateType: messages.SyncPodUpdate, Pod: p2, StartTime: t1}, messages.SyncPodUpdate, 2, t1, nil},
		{"latest update wins, earliest start kept", &messages.SyncPod{UpdateType: messages.SyncPodUpdate, Pod: p1, StartTime: t0}, &messages.SyncPod{UpdateType: messages.SyncPodSync, Pod: p2, StartTime: t2}, messages.SyncPodSync, 2, t0, nil},
		{"later next keeps earlier pending start", &messages.SyncPod{UpdateType: messages.SyncPodCreate, Pod: p1, StartTime: t1}, &messages.SyncPod{UpdateType: messages.SyncPodUpdate, Pod: p2, StartTime: t2}, messages.SyncPodUpdate, 2, t1, nil},
		{"earlier next start wins", &messages.SyncPod{UpdateType: messages.SyncPodUpdate, Pod: p1, StartTime: t2}, &messages.SyncPod{UpdateType: messages.SyncPodUpdate, Pod: p2, StartTime: t0}, messages.SyncPodUpdate, 2, t0, nil},
		{"pending kill never overwritten by non-kill", &messages.SyncPod{UpdateType: messages.SyncPodKill, Pod: p1, StartTime: t0, KillOptions: kill}, &messages.SyncPod{UpdateType: messages.SyncPodUpdate, Pod: p2, StartTime: t1}, messages.SyncPodKill, 2, t0, kill},
		{"kill replaces pending update", &messages.SyncPod{UpdateType: messages.SyncPodUpdate, Pod: p1, StartTime: t1}, &messages.SyncPod{UpdateType: messages.SyncPodKill, Pod: p2, StartTime: t2, KillOptions: kill}, messages.SyncPodKill, 2, t1, kill},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := coalesce(tc.pending, tc.next)
			if got.UpdateType != tc.wantType || got.Pod.Generation != tc.wantGen || !got.StartTime.Equal(tc.wantStart) || got.KillOptions != tc.wantKill {
				t.Fatalf("coalesce = %v gen %d start %v kill %v; want %v gen %d start %v kill %v",
					got.UpdateType, got.Pod.Generation, got.StartTime, got.KillOptions, tc.wantType, tc.wantGen, tc.wantStart, tc.wantKill)
			}
		})
	}
}

func TestEffectiveGracePeriodIsShortestAndAtLeastOneSecond(t *testing.T) {
	withDeletion := func(spec *int64, del int64) *v1.Pod { return deleted(testPod("u", 1, spec), del) }
	cases := []struct {
		name string
		pod  *v1.Pod
		opts *messages.KillOptions
		want int64
	}{
		{"default spec grace is 30", testPod("u", 1, nil), nil, 30},
		{"spec grace", testPod("u", 1, int64p(45)), nil, 45},
		{"deletion grace shorter than spec", withDeletion(int64p(45), 10), nil, 10},
		{"deletion grace longer than spec is ignored", withDeletion(int64p(5), 10), nil, 5},
		{"override shortest", withDeletion(int64p(45), 10), &messages.KillOptions{GracePeriodSecondsOverride: int64p(3)}, 3},
		{"override cannot lengthen", testPod("u", 1, int64p(5)), &messages.KillOptions{GracePeriodSecondsOverride: int64p(60)}, 5},
		{"zero becomes one", testPod("u", 1, int64p(0)), nil, 1},
		{"zero override becomes one", testPod("u", 1, nil), &messages.KillOptions{GracePeriodSecondsOverride: int64p(0)}, 1},
		{"orphan unknown grace is one", nil, nil, 1},
		{"orphan override", nil, &messages.KillOptions{GracePeriodSecondsOverride: int64p(7)}, 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := gracePeriod(tc.pod, tc.opts); got != tc.want {
				t.Fatalf("gracePeriod = %d, want %d", got, tc.want)
			}
		})
	}
	if got := shortest(int64p(5), 10); got != 5 {
		t.Fatalf("shortest(5, 10) = %d: the grace period must only shorten", got)
	}
}

func TestRequeueIntervals(t *testing.T) {
	cases := []struct {
		name         string
		phaseChanged bool
		err          error
		min, max     time.Duration
	}{
		{"phase changed requeues now", true, nil, 0, 0},
		{"error retries in 10s jittered", false, errors.New("boom"), 10 * time.Second, 15 * time.Second},
		{"healthy resyncs in 1m jittered", false, nil, time.Minute, 90 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for i := 0; i < 200; i++ {
				got := requeueAfter(tc.phaseChanged, tc.err, time.Minute, 10*time.Second)
				if got < tc.min || got > tc.max || (tc.max > 0 && got == tc.max) {
					t.Fatalf("requeueAfter = %v, want in [%v, %v)", got, tc.min, tc.max)
				}
			}
		})
	}
}

func TestTerminalStatus(t *testing.T) {
	evict := &messages.KillOptions{Evict: true, Reason: "Evicted", Message: "node low on memory"}
	cases := []struct {
		name       string
		generated  v1.PodPhase
		last       v1.PodPhase
		kill       *messages.KillOptions
		wantPhase  v1.PodPhase
		wantReason string
	}{
		{"running pod killed ends Failed", v1.PodRunning, v1.PodRunning, nil, v1.PodFailed, ""},
		{"succeeded stays succeeded", v1.PodSucceeded, v1.PodSucceeded, nil, v1.PodSucceeded, ""},
		{"phase never goes back from succeeded", v1.PodPending, v1.PodSucceeded, nil, v1.PodSucceeded, ""},
		{"evicted ends failed with reason", v1.PodRunning, v1.PodRunning, evict, v1.PodFailed, "Evicted"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := terminalStatus(v1.PodStatus{Phase: tc.generated}, tc.last, tc.kill)
			if got.Phase != tc.wantPhase || got.Reason != tc.wantReason {
				t.Fatalf("terminalStatus = %s/%q, want %s/%q", got.Phase, got.Reason, tc.wantPhase, tc.wantReason)
			}
		})
	}
}

// TestTerminalStatusSetsKillConditions: an eviction's conditions (the
// node shutdown's DisruptionTarget) replace those of the same type and
// keep the others.
func TestTerminalStatusSetsKillConditions(t *testing.T) {
	target := v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonTerminationByKubelet, Message: "shutdown"}
	kill := &messages.KillOptions{Evict: true, Reason: "Terminated", Message: "shutdown", Conditions: []v1.PodCondition{target}}
	generated := v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
		{Type: v1.PodReady, Status: v1.ConditionFalse},
		{Type: v1.DisruptionTarget, Status: v1.ConditionFalse, Reason: "old"},
	}}
	got := terminalStatus(generated, v1.PodRunning, kill)
	if len(got.Conditions) != 2 || got.Conditions[0].Type != v1.PodReady || got.Conditions[1] != target {
		t.Fatalf("conditions = %+v, want Ready kept and DisruptionTarget replaced by %+v", got.Conditions, target)
	}
	if len(generated.Conditions) != 2 || generated.Conditions[1].Reason != "old" {
		t.Fatalf("the generated status was modified: %+v", generated.Conditions)
	}
}

func TestNothingRunning(t *testing.T) {
	ready := &runtimeapi.PodSandboxStatus{Id: "s", State: runtimeapi.PodSandboxState_SANDBOX_READY}
	notReady := &runtimeapi.PodSandboxStatus{Id: "s", State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY}
	cases := []struct {
		name string
		s    *cri.PodStatus
		want bool
	}{
		{"empty", &cri.PodStatus{}, true},
		{"exited container, sandbox not ready", &cri.PodStatus{ContainerStatuses: []*cri.ContainerStatus{{State: cri.ContainerStateExited}}, SandboxStatuses: []*runtimeapi.PodSandboxStatus{notReady}}, true},
		{"running container", &cri.PodStatus{ContainerStatuses: []*cri.ContainerStatus{{State: cri.ContainerStateRunning}}}, false},
		{"ready sandbox", &cri.PodStatus{SandboxStatuses: []*runtimeapi.PodSandboxStatus{ready}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := nothingRunning(tc.s); got != tc.want {
				t.Fatalf("nothingRunning = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPropsValidatesConfig(t *testing.T) {
	if _, err := Props(Config{}, "u"); err == nil || err.Error() != "podactor config: field Runtime is required" {
		t.Fatalf("Props without runtime: %v", err)
	}
}
