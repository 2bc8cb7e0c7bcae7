package status

import (
	"slices"
	"testing"
	"time"

	"github.com/actorlet/actorlet/messages"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/messages/podrules"
)

var (
	t0 = metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 = metav1.NewTime(t0.Add(time.Minute))
)

type containerSpec struct {
	name               string
	readiness, startup bool
}

func testPod(policy v1.RestartPolicy, containers ...containerSpec) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"}}
	pod.Spec.RestartPolicy = policy
	probe := &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
	for _, c := range containers {
		spec := v1.Container{Name: c.name, Image: "busybox"}
		if c.readiness {
			spec.ReadinessProbe = probe
		}
		if c.startup {
			spec.StartupProbe = probe
		}
		pod.Spec.Containers = append(pod.Spec.Containers, spec)
	}
	return pod
}

func running(name, id string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, ContainerID: "containerd://" + id, State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: t0}}}
}

func terminated(name, id string, code int32) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, ContainerID: "containerd://" + id, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code, FinishedAt: t0}}}
}

func waiting(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
}

func computed(phase v1.PodPhase, cs ...v1.ContainerStatus) v1.PodStatus {
	return v1.PodStatus{Phase: phase, ContainerStatuses: cs}
}

func result(container, id string, kind messages.ProbeKind, r messages.ProbeResult) probeResults {
	return probeResults{probeKey{container, kind}: {containerID: id, result: r}}
}

func merge(rs ...probeResults) probeResults {
	out := probeResults{}
	for _, r := range rs {
		for k, v := range r {
			out[k] = v
		}
	}
	return out
}

func condition(s v1.PodStatus, t v1.PodConditionType) *v1.PodCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

func TestBuildStatusReadiness(t *testing.T) {
	type want struct {
		ready, started  bool
		containersReady v1.ConditionStatus
		reason, message string
		phase           v1.PodPhase
		terminated      bool
	}
	// The three outcomes most cases of the one container "app" running
	// want: ready; started but not ready; neither started nor ready.
	appReady := want{ready: true, started: true, containersReady: v1.ConditionTrue, phase: v1.PodRunning}
	appUnready := want{started: true, containersReady: v1.ConditionFalse, phase: v1.PodRunning,
		reason: ReasonContainersNotReady, message: "containers with unready status: [app]"}
	appUnstarted := appUnready
	appUnstarted.started = false
	tests := []struct {
		name     string
		pod      *v1.Pod
		computed v1.PodStatus
		probes   probeResults
		old      *v1.PodStatus
		want     want
	}{
		{
			name:     "running without probes is ready",
			pod:      testPod(v1.RestartPolicyAlways, containerSpec{name: "app"}),
			computed: computed(v1.PodRunning, running("app", "c1")),
			want:     appReady,
		},
		{
			name:     "readiness probe without result is not ready",
			pod:      testPod(v1.RestartPolicyAlways, containerSpec{name: "app", readiness: true}),
			computed: computed(v1.PodRunning, running("app", "c1")),
			want:     appUnready,
		},
		{
			name:     "readiness success makes it ready",
			pod:      testPod(v1.RestartPolicyAlways, containerSpec{name: "app", readiness: true}),
			computed: computed(v1.PodRunning, running("app", "c1")),
			probes:   result("app", "c1", messages.Readiness, messages.ProbeSuccess),
			want:     appReady,
		},
		{
			name:     "readiness failure",
			pod:      testPod(v1.RestartPolicyAlways, containerSpec{name: "app", readiness: true}),
			computed: computed(v1.PodRunning, running("app", "c1")),
			probes:   result("app", "c1", messages.Readiness, messages.ProbeFailure),
			want:     appUnready,
		},
		{
			name:     "readiness success of a previous instance does not count",
			pod:      testPod(v1.RestartPolicyAlways, containerSpec{name: "app", readiness: true}),
			computed: computed(v1.PodRunning, running("app", "c2")),
			probes:   result("app", "c1", messages.Readiness, messages.ProbeSuccess),
			want:     appUnready,
		},
		{
			name:     "startup probe pending: neither started nor ready",
			pod:      testPod(v1.RestartPolicyAlways, containerSpec{name: "app", startup: true}),
			computed: computed(v1.PodRunning, running("app", "c1")),
			want:     appUnstarted,
		},
		{
			name:     "startup success without readiness probe: ready",
			pod:      testPod(v1.RestartPolicyAlways, containerSpec{name: "app", startup: true}),
			computed: computed(v1.PodRunning, running("app", "c1")),
			probes:   result("app", "c1", messages.Startup, messages.ProbeSuccess),
			want:     appReady,
		},
		{
			name:     "startup success and readiness pending",
			pod:      testPod(v1.RestartPolicyAlways, containerSpec{name: "app", startup: true, readiness: true}),
			computed: computed(v1.PodRunning, running("app", "c1")),
			probes:   result("app", "c1", messages.Startup, messages.ProbeSuccess),
			want:     appUnready,
		},
		{
			name:     "readiness success while startup pending is not ready",
			pod:      testPod(v1.RestartPolicyAlways, containerSpec{name: "app", startup: true, readiness: true}),
			computed: computed(v1.PodRunning, running("app", "c1")),
			probes:   result("app", "c1", messages.Readiness, messages.ProbeSuccess),
			want:     appUnstarted,
		},
		{
			name:     "waiting container",
			pod:      testPod(v1.RestartPolicyAlways, containerSpec{name: "app"}),
			computed: computed(v1.PodPending, waiting("app")),
			want: want{containersReady: v1.ConditionFalse, phase: v1.PodPending,
				reason: ReasonContainersNotReady, message: "containers with unready status: [app]"},
		},
		{
			name:     "container without status is unknown",
			pod:      testPod(v1.RestartPolicyAlways, containerSpec{name: "app"}, containerSpec{name: "side"}),
			computed: computed(v1.PodPending, waiting("app")),
			want: want{containersReady: v1.ConditionFalse, phase: v1.PodPending, reason: ReasonContainersNotReady,
				message: "containers with unknown status: [side], containers with unready status: [app]"},
		},
		{
			name:     "no container statuses at all",
			pod:      testPod(v1.RestartPolicyAlways, containerSpec{name: "app"}),
			computed: computed(v1.PodPending),
			want:     want{containersReady: v1.ConditionFalse, phase: v1.PodPending, reason: ReasonUnknownContainerStatuses},
		},
		{
			name:     "succeeded",
			pod:      testPod(v1.RestartPolicyNever, containerSpec{name: "app"}),
			computed: computed(v1.PodSucceeded, terminated("app", "c1", 0)),
			want:     want{containersReady: v1.ConditionFalse, phase: v1.PodSucceeded, reason: ReasonPodCompleted, terminated: true},
		},
		{
			name:     "failed",
			pod:      testPod(v1.RestartPolicyNever, containerSpec{name: "app"}),
			computed: computed(v1.PodFailed, terminated("app", "c1", 1)),
			want:     want{containersReady: v1.ConditionFalse, phase: v1.PodFailed, reason: ReasonPodFailed, terminated: true},
		},
		{
			name:     "terminal phase never goes back, nor its container states",
			pod:      testPod(v1.RestartPolicyAlways, containerSpec{name: "app"}),
			old:      &v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{terminated("app", "c1", 137)}},
			computed: computed(v1.PodRunning, running("app", "c2")),
			want: want{containersReady: v1.ConditionFalse, phase: v1.PodFailed, reason: ReasonPodFailed,
				terminated: true},
		},
		{
			name:     "restartPolicy Never keeps a terminated container terminated",
			pod:      testPod(v1.RestartPolicyNever, containerSpec{name: "app"}),
			old:      &v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{terminated("app", "c1", 1)}},
			computed: computed(v1.PodRunning, running("app", "c2")),
			want: want{containersReady: v1.ConditionFalse, phase: v1.PodRunning, reason: ReasonContainersNotReady,
				message: "containers with unready status: [app]", terminated: true},
		},
		{
			name:     "restartPolicy Always lets a terminated container run again",
			pod:      testPod(v1.RestartPolicyAlways, containerSpec{name: "app"}),
			old:      &v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{terminated("app", "c1", 1)}},
			computed: computed(v1.PodRunning, running("app", "c2")),
			want:     appReady,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			probes := tt.probes
			if probes == nil {
				probes = probeResults{}
			}
			in := *tt.computed.DeepCopy()
			got := buildStatus(tt.pod, tt.computed, true, probes, tt.old, t1)

			if got.Phase != tt.want.phase {
				t.Errorf("phase = %s, want %s", got.Phase, tt.want.phase)
			}
			if len(got.ContainerStatuses) > 0 {
				cs := got.ContainerStatuses[0]
				if cs.Ready != tt.want.ready || cs.Started == nil || *cs.Started != tt.want.started {
					t.Errorf("container ready=%v started=%v, want ready=%v started=%v", cs.Ready, cs.Started, tt.want.ready, tt.want.started)
				}
				if stays := cs.State.Terminated != nil; stays != tt.want.terminated {
					t.Errorf("container state = %+v, terminated = %v, want %v", cs.State, stays, tt.want.terminated)
				}
			}
			for _, typ := range []v1.PodConditionType{v1.ContainersReady, v1.PodReady} {
				c := condition(got, typ)
				if c == nil {
					t.Fatalf("no %s condition in %+v", typ, got.Conditions)
				}
				if c.Status != tt.want.containersReady || c.Reason != tt.want.reason || c.Message != tt.want.message {
					t.Errorf("%s = %s/%q/%q, want %s/%q/%q", typ, c.Status, c.Reason, c.Message, tt.want.containersReady, tt.want.reason, tt.want.message)
				}
			}
			for _, typ := range []v1.PodConditionType{v1.PodScheduled, v1.PodInitialized} {
				if c := condition(got, typ); c == nil || c.Status != v1.ConditionTrue {
					t.Errorf("%s condition = %+v, want True", typ, c)
				}
			}
			if !equalStatus(in, tt.computed) {
				t.Error("buildStatus modified its input")
			}
		})
	}
}

func TestBuildStatusConditionTransitions(t *testing.T) {
	pod := testPod(v1.RestartPolicyAlways, containerSpec{name: "app", readiness: true})
	ready := result("app", "c1", messages.Readiness, messages.ProbeSuccess)
	in := computed(v1.PodRunning, running("app", "c1"))
	t2 := metav1.NewTime(t1.Add(time.Minute))
	t3 := metav1.NewTime(t2.Add(time.Minute))

	first := buildStatus(pod, in, true, probeResults{}, nil, t1)
	if c := condition(first, v1.PodReady); c.Status != v1.ConditionFalse || !c.LastTransitionTime.Equal(&t1) {
		t.Fatalf("first Ready = %+v, want False at t1", c)
	}
	same := buildStatus(pod, in, true, probeResults{}, &first, t2)
	if c := condition(same, v1.PodReady); !c.LastTransitionTime.Equal(&t1) {
		t.Fatalf("Ready moved its transition time without flipping: %+v", c)
	}
	if !equalStatus(first, same) {
		t.Fatalf("rebuilding an unchanged status changed it:\n%+v\n%+v", first, same)
	}
	flipped := buildStatus(pod, in, true, ready, &same, t3)
	for _, typ := range []v1.PodConditionType{v1.PodReady, v1.ContainersReady} {
		if c := condition(flipped, typ); c.Status != v1.ConditionTrue || !c.LastTransitionTime.Equal(&t3) {
			t.Fatalf("%s after readiness = %+v, want True at t3", typ, c)
		}
	}
	if c := condition(flipped, v1.PodScheduled); !c.LastTransitionTime.Equal(&t1) {
		t.Fatalf("PodScheduled moved without flipping: %+v", c)
	}
	if !flipped.StartTime.Equal(&t1) {
		t.Fatalf("StartTime = %v, want the first one %v", flipped.StartTime, t1)
	}
}

func TestBuildStatusStartTime(t *testing.T) {
	pod := testPod(v1.RestartPolicyAlways, containerSpec{name: "app"})
	in := computed(v1.PodRunning, running("app", "c1"))
	in.StartTime = &t0
	got := buildStatus(pod, in, true, probeResults{}, nil, t1)
	if !got.StartTime.Equal(&t0) {
		t.Fatalf("StartTime = %v, want the computed %v", got.StartTime, t0)
	}
	later := in.DeepCopy()
	later.StartTime = &t1
	again := buildStatus(pod, *later, true, probeResults{}, &got, t1)
	if !again.StartTime.Equal(&t0) {
		t.Fatalf("StartTime changed once set: %v", again.StartTime)
	}
}

func TestGeneratedInitializedAndReadinessGates(t *testing.T) {
	pod := testPod(v1.RestartPolicyAlways, containerSpec{name: "app"})
	pod.Spec.InitContainers = []v1.Container{{Name: "init-a"}, {Name: "init-b"}}
	pod.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/lb"}}

	in := v1.PodStatus{
		Phase:                 v1.PodPending,
		InitContainerStatuses: []v1.ContainerStatus{terminated("init-a", "i1", 0), running("init-b", "i2")},
		ContainerStatuses:     []v1.ContainerStatus{waiting("app")},
	}
	got := buildStatus(pod, in, true, probeResults{}, nil, t1)
	c := condition(got, v1.PodInitialized)
	if c.Status != v1.ConditionFalse || c.Reason != podrules.ReasonContainersNotInitialized || c.Message != "containers with incomplete status: [init-b]" {
		t.Fatalf("Initialized = %+v", c)
	}
	if !got.InitContainerStatuses[0].Ready || got.InitContainerStatuses[1].Ready {
		t.Fatalf("init container readiness = %v/%v, want true/false", got.InitContainerStatuses[0].Ready, got.InitContainerStatuses[1].Ready)
	}

	in = computed(v1.PodRunning, running("app", "c1"))
	got = buildStatus(pod, in, true, probeResults{}, nil, t1)
	if c := condition(got, v1.ContainersReady); c.Status != v1.ConditionTrue {
		t.Fatalf("ContainersReady = %+v, want True", c)
	}
	if c := condition(got, v1.PodReady); c.Status != v1.ConditionFalse || c.Reason != ReasonReadinessGatesNotReady {
		t.Fatalf("Ready with an unmet gate = %+v", c)
	}
	in.Conditions = append(in.Conditions, v1.PodCondition{Type: "example.com/lb", Status: v1.ConditionTrue})
	got = buildStatus(pod, in, true, probeResults{}, nil, t1)
	if c := condition(got, v1.PodReady); c.Status != v1.ConditionTrue {
		t.Fatalf("Ready with the gate met = %+v", c)
	}
	if c := condition(got, "example.com/lb"); c == nil {
		t.Fatal("the gate's condition was dropped")
	}
}

// TestGeneratedConditionsFromRuntimeFacts: every condition is generated
// here, in the kubelet's order, PodReadyToStartContainers from the
// runtime's one fact, PodScheduled always True, Initialized from the init
// containers' statuses.
func TestGeneratedConditionsFromRuntimeFacts(t *testing.T) {
	pod := testPod(v1.RestartPolicyNever, containerSpec{name: "app"})
	pod.Spec.InitContainers = []v1.Container{{Name: "init"}}
	pod.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/lb"}}
	in := v1.PodStatus{
		Phase:                 v1.PodPending,
		InitContainerStatuses: []v1.ContainerStatus{waiting("init")},
		ContainerStatuses:     []v1.ContainerStatus{waiting("app")},
		Conditions:            []v1.PodCondition{{Type: "example.com/lb", Status: v1.ConditionTrue}},
	}
	got := buildStatus(pod, in, false, probeResults{}, nil, t1)
	var order []v1.PodConditionType
	for _, c := range got.Conditions {
		order = append(order, c.Type)
	}
	want := []v1.PodConditionType{v1.PodReadyToStartContainers, "example.com/lb", v1.PodInitialized, v1.PodReady, v1.ContainersReady, v1.PodScheduled}
	if !slices.Equal(order, want) {
		t.Fatalf("conditions %v, want %v", order, want)
	}
	if c := condition(got, v1.PodReadyToStartContainers); c.Status != v1.ConditionFalse {
		t.Errorf("PodReadyToStartContainers without a ready sandbox = %+v", c)
	}
	if c := condition(got, v1.PodScheduled); c.Status != v1.ConditionTrue {
		t.Errorf("PodScheduled = %+v", c)
	}
	if c := condition(got, v1.PodInitialized); c.Status != v1.ConditionFalse || c.Message != "containers with incomplete status: [init]" {
		t.Errorf("Initialized before the init container ran = %+v", c)
	}

	in.InitContainerStatuses = []v1.ContainerStatus{terminated("init", "i1", 0)}
	got = buildStatus(pod, in, true, probeResults{}, &got, t1)
	if c := condition(got, v1.PodReadyToStartContainers); c.Status != v1.ConditionTrue {
		t.Errorf("PodReadyToStartContainers with a ready sandbox = %+v", c)
	}
	if c := condition(got, v1.PodInitialized); c.Status != v1.ConditionTrue {
		t.Errorf("Initialized once the init container exited 0 = %+v", c)
	}

	in.InitContainerStatuses = []v1.ContainerStatus{terminated("init", "i1", 2)}
	in.Phase = v1.PodFailed
	got = buildStatus(pod, in, true, probeResults{}, nil, t1)
	if c := condition(got, v1.PodInitialized); c.Status != v1.ConditionFalse || c.Reason != podrules.ReasonContainersNotInitialized {
		t.Errorf("Initialized after the init container failed = %+v", c)
	}
}

func TestRejectedStatus(t *testing.T) {
	got := rejectedStatus("OutOfcpu", "Node didn't have enough resource: cpu", nil, t1)
	if got.Phase != v1.PodFailed || got.Reason != "OutOfcpu" || got.Message == "" || !got.StartTime.Equal(&t1) {
		t.Fatalf("rejectedStatus() = %+v", got)
	}
}
