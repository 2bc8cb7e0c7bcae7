package podrules

import (
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestIsTerminal(t *testing.T) {
	for phase, want := range map[v1.PodPhase]bool{
		v1.PodPending: false, v1.PodRunning: false, v1.PodUnknown: false, "": false,
		v1.PodSucceeded: true, v1.PodFailed: true,
	} {
		if got := IsTerminal(phase); got != want {
			t.Errorf("IsTerminal(%q) = %v, want %v", phase, got, want)
		}
	}
}

func TestInitializedCondition(t *testing.T) {
	if c := InitializedCondition(nil); c.Type != v1.PodInitialized || c.Status != v1.ConditionTrue || c.Reason != "" {
		t.Errorf("no incomplete init containers: %+v", c)
	}
	c := InitializedCondition([]string{"a", "b"})
	if c.Status != v1.ConditionFalse || c.Reason != ReasonContainersNotInitialized || c.Message != "containers with incomplete status: [a b]" {
		t.Errorf("incomplete init containers: %+v", c)
	}
}

func TestPodPhase(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	run := v1.ContainerStatus{State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
	exit := func(code int32) v1.ContainerStatus {
		return v1.ContainerStatus{State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}}
	}
	wait := v1.ContainerStatus{State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
	crashed := v1.ContainerStatus{State: wait.State, LastTerminationState: exit(1).State}
	named := func(n string, s v1.ContainerStatus) v1.ContainerStatus { s.Name = n; return s }
	started := func(s v1.ContainerStatus) v1.ContainerStatus { b := s.State.Running != nil; s.Started = &b; return s }
	tests := []struct {
		name    string
		policy  v1.RestartPolicy
		sidecar bool // the pod has a sidecar "side" and an init container "init"
		inits   []v1.ContainerStatus
		regular []v1.ContainerStatus
		want    v1.PodPhase
	}{
		{"waiting", v1.RestartPolicyAlways, false, nil, []v1.ContainerStatus{wait}, v1.PodPending},
		{"running", v1.RestartPolicyAlways, false, nil, []v1.ContainerStatus{run}, v1.PodRunning},
		{"exited 0, Always", v1.RestartPolicyAlways, false, nil, []v1.ContainerStatus{exit(0)}, v1.PodRunning},
		{"exited 0, Never", v1.RestartPolicyNever, false, nil, []v1.ContainerStatus{exit(0)}, v1.PodSucceeded},
		{"exited 1, Never", v1.RestartPolicyNever, false, nil, []v1.ContainerStatus{exit(1)}, v1.PodFailed},
		{"exited 1, OnFailure", v1.RestartPolicyOnFailure, false, nil, []v1.ContainerStatus{exit(1)}, v1.PodRunning},
		{"restarting", v1.RestartPolicyAlways, false, nil, []v1.ContainerStatus{crashed}, v1.PodRunning},
		{"one of two running, one done", v1.RestartPolicyNever, false, nil, []v1.ContainerStatus{run, exit(0)}, v1.PodRunning},
		{"no status", v1.RestartPolicyAlways, false, nil, []v1.ContainerStatus{{}}, v1.PodPending},
		{"no containers", v1.RestartPolicyNever, false, nil, nil, v1.PodPending},
		{"init running", v1.RestartPolicyNever, true,
			[]v1.ContainerStatus{named("init", started(run)), named("side", started(wait))}, []v1.ContainerStatus{wait}, v1.PodPending},
		{"init failed, Never", v1.RestartPolicyNever, true,
			[]v1.ContainerStatus{named("init", exit(1)), named("side", started(run))}, []v1.ContainerStatus{wait}, v1.PodFailed},
		{"init crashed, Always", v1.RestartPolicyAlways, true,
			[]v1.ContainerStatus{named("init", crashed), named("side", started(run))}, []v1.ContainerStatus{wait}, v1.PodPending},
		{"only the sidecar left running", v1.RestartPolicyNever, true,
			[]v1.ContainerStatus{named("init", exit(0)), named("side", started(run))}, []v1.ContainerStatus{exit(0)}, v1.PodRunning},
		{"job done, sidecar stopped", v1.RestartPolicyNever, true,
			[]v1.ContainerStatus{named("init", exit(0)), named("side", started(exit(137)))}, []v1.ContainerStatus{exit(0)}, v1.PodSucceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{RestartPolicy: tt.policy}}
			if tt.sidecar {
				pod.Spec.InitContainers = []v1.Container{{Name: "init"}, {Name: "side", RestartPolicy: &always}}
			}
			for i := range tt.regular {
				tt.regular[i].Name = fmt.Sprintf("c%d", i)
				pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: tt.regular[i].Name})
			}
			s := &v1.PodStatus{InitContainerStatuses: tt.inits, ContainerStatuses: tt.regular, Phase: v1.PodFailed}
			if got := PodPhase(pod, s); got != tt.want {
				t.Errorf("PodPhase() = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestIncompleteInitContainers(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "a"}, {Name: "side", RestartPolicy: &always}, {Name: "b"}},
		Containers:     []v1.Container{{Name: "app"}},
	}}
	yes, no := true, false
	s := &v1.PodStatus{
		InitContainerStatuses: []v1.ContainerStatus{
			{Name: "a", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0}}},
			{Name: "side", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}, Started: &no},
		},
		ContainerStatuses: []v1.ContainerStatus{{Name: "app", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{}}}},
	}
	if got := IncompleteInitContainers(pod, s); !slices.Equal(got, []string{"side", "b"}) {
		t.Errorf("sidecar not started, b without status: %v", got)
	}
	s.InitContainerStatuses[1].Started = &yes
	s.InitContainerStatuses = append(s.InitContainerStatuses, v1.ContainerStatus{Name: "b", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}}})
	if got := IncompleteInitContainers(pod, s); !slices.Equal(got, []string{"b"}) {
		t.Errorf("b failed: %v", got)
	}
	s.ContainerStatuses[0].State = v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	if got := IncompleteInitContainers(pod, s); got != nil {
		t.Errorf("a regular container ran: %v", got)
	}
}
