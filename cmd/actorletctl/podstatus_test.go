package main

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodReason(t *testing.T) {
	now := metav1.Now()
	running := v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	waiting := func(r string) v1.ContainerState {
		return v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: r}}
	}
	terminated := func(r string, code int32) v1.ContainerState {
		return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: r, ExitCode: code}}
	}
	pod := func(phase v1.PodPhase, reason string, states ...v1.ContainerState) *v1.Pod {
		p := &v1.Pod{Status: v1.PodStatus{Phase: phase, Reason: reason}}
		for _, s := range states {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{})
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, v1.ContainerStatus{State: s, Ready: s.Running != nil})
		}
		return p
	}
	deleting := pod(v1.PodRunning, "", running)
	deleting.DeletionTimestamp = &now
	initFailed := pod(v1.PodPending, "", waiting("PodInitializing"))
	initFailed.Spec.InitContainers = []v1.Container{{}}
	initFailed.Status.InitContainerStatuses = []v1.ContainerStatus{{State: terminated("Error", 1)}}

	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want string
	}{
		{"no status yet", &v1.Pod{}, "Pending"},
		{"running", pod(v1.PodRunning, "", running), "Running"},
		{"crash loop", pod(v1.PodRunning, "", waiting("CrashLoopBackOff")), "CrashLoopBackOff"},
		{"completed", pod(v1.PodSucceeded, "", terminated("Completed", 0)), "Completed"},
		{"failed container", pod(v1.PodFailed, "", terminated("Error", 3)), "Error"},
		{"evicted shows the pod's reason", pod(v1.PodFailed, "Evicted", terminated("Error", 143)), "Evicted"},
		{"rejected at admission", pod(v1.PodFailed, "OutOfcpu"), "OutOfcpu"},
		{"init container failed", initFailed, "Init:Error"},
		{"terminating", deleting, "Terminating"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := podReason(tc.pod); got != tc.want {
				t.Errorf("podReason = %q, want %q", got, tc.want)
			}
		})
	}
}

// Sidecars as kubectl shows them: a started sidecar does not hold the
// STATUS at Init, it counts in READY, and a finished job with its sidecar
// stopped shows Completed.
func TestPodReasonSidecar(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	yes := true
	p := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "proxy", RestartPolicy: &always}},
		Containers:     []v1.Container{{Name: "app"}},
	}}
	p.Status = v1.PodStatus{Phase: v1.PodRunning,
		InitContainerStatuses: []v1.ContainerStatus{{Name: "proxy", Started: &yes, Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}},
		ContainerStatuses:     []v1.ContainerStatus{{Name: "app", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}},
		Conditions:            []v1.PodCondition{{Type: v1.PodInitialized, Status: v1.ConditionTrue}},
	}
	if got := podReason(p); got != "Running" {
		t.Errorf("running pod with a sidecar: %q, want Running", got)
	}
	if got := podReady(p); got != "2/2" {
		t.Errorf("READY = %q, want 2/2", got)
	}
	p.Status.Phase = v1.PodSucceeded
	p.Status.InitContainerStatuses[0] = v1.ContainerStatus{Name: "proxy", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Error", ExitCode: 143}}}
	p.Status.ContainerStatuses[0] = v1.ContainerStatus{Name: "app", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Completed"}}}
	if got := podReason(p); got != "Completed" {
		t.Errorf("finished job with a stopped sidecar: %q, want Completed", got)
	}
}
