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
