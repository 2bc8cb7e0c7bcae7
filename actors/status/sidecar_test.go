package status

import (
	"testing"

	"github.com/actorlet/actorlet/messages"
	v1 "k8s.io/api/core/v1"
)

// A sidecar counts as initialized once started (startup probe succeeded),
// its readiness gates ContainersReady, and a Never pod's exited sidecar is
// not frozen terminated: it restarts whatever the pod's policy.
func TestBuildStatusSidecar(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	probe := &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
	pod := testPod(v1.RestartPolicyNever, containerSpec{name: "app"})
	pod.Spec.InitContainers = []v1.Container{{Name: "proxy", Image: "envoy", RestartPolicy: &always, StartupProbe: probe, ReadinessProbe: probe}}

	in := computed(v1.PodPending, waiting("app"))
	in.InitContainerStatuses = []v1.ContainerStatus{running("proxy", "p1")}
	s := buildStatus(pod, in, true, probeResults{}, nil, t1)
	if c := condition(s, v1.PodInitialized); c.Status != v1.ConditionFalse || c.Message != "containers with incomplete status: [proxy]" {
		t.Errorf("Initialized before the startup probe = %+v, want False naming proxy", c)
	}
	if st := s.InitContainerStatuses[0]; *st.Started || st.Ready {
		t.Errorf("sidecar started=%v ready=%v before its startup probe", *st.Started, st.Ready)
	}

	started := result("proxy", "p1", messages.Startup, messages.ProbeSuccess)
	s = buildStatus(pod, in, true, started, &s, t1)
	if c := condition(s, v1.PodInitialized); c.Status != v1.ConditionTrue {
		t.Errorf("Initialized after the startup probe = %+v, want True", c)
	}

	in = computed(v1.PodRunning, running("app", "a1"))
	in.InitContainerStatuses = []v1.ContainerStatus{running("proxy", "p1")}
	s = buildStatus(pod, in, true, started, &s, t1)
	if c := condition(s, v1.ContainersReady); c.Status != v1.ConditionFalse || c.Message != "containers with unready status: [proxy]" {
		t.Errorf("ContainersReady with an unready sidecar = %+v", c)
	}
	s = buildStatus(pod, in, true, merge(started, result("proxy", "p1", messages.Readiness, messages.ProbeSuccess)), &s, t1)
	if c := condition(s, v1.ContainersReady); c.Status != v1.ConditionTrue {
		t.Errorf("ContainersReady with a ready sidecar = %+v", c)
	}

	// The sidecar exits, then runs again: its running state is reported.
	in.InitContainerStatuses = []v1.ContainerStatus{terminated("proxy", "p1", 1)}
	s = buildStatus(pod, in, true, started, &s, t1)
	in.InitContainerStatuses = []v1.ContainerStatus{running("proxy", "p2")}
	s = buildStatus(pod, in, true, started, &s, t1)
	if st := s.InitContainerStatuses[0]; st.State.Running == nil {
		t.Errorf("restarted sidecar in a Never pod = %+v, want running", st.State)
	}
}
