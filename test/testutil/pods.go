package testutil

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// WaitPod polls read every every until the pod it returns satisfies cond,
// and returns that pod. What fails the test names the pod, what cond found
// and the pod's status (PodSummary).
func WaitPod(t testing.TB, timeout, every time.Duration, read func() (*v1.Pod, error), cond func(*v1.Pod) error) *v1.Pod {
	t.Helper()
	var got *v1.Pod
	EventuallyEvery(t, timeout, every, func() error {
		p, err := read()
		if err != nil {
			return err
		}
		if err := cond(p); err != nil {
			return fmt.Errorf("pod %s: %w (status %s)", p.Name, err, PodSummary(p))
		}
		got = p
		return nil
	})
	return got
}

// PodSummary is a pod's status on one line, for failure messages: phase,
// reason, message, readiness, deletion, and each (init) container's state,
// restarts, readiness and ID.
func PodSummary(p *v1.Pod) string {
	if p == nil {
		return "no status"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "phase=%s reason=%q message=%.200q ready=%s", p.Status.Phase, p.Status.Reason, p.Status.Message, PodCondition(p, v1.PodReady))
	if p.DeletionTimestamp != nil {
		b.WriteString(" deleting")
	}
	for _, list := range [][]v1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			fmt.Fprintf(&b, " [%s", cs.Name)
			switch s := cs.State; {
			case s.Running != nil:
				b.WriteString(" running")
			case s.Waiting != nil:
				fmt.Fprintf(&b, " waiting:%s", s.Waiting.Reason)
				if s.Waiting.Message != "" {
					fmt.Fprintf(&b, " %.200q", s.Waiting.Message)
				}
			case s.Terminated != nil:
				fmt.Fprintf(&b, " terminated:%s(%d)", s.Terminated.Reason, s.Terminated.ExitCode)
			default:
				b.WriteString(" unknown")
			}
			fmt.Fprintf(&b, " restarts=%d ready=%t id=%s]", cs.RestartCount, cs.Ready, cs.ContainerID)
		}
	}
	return b.String()
}

// PodCondition is the status of the pod's condition typ ("" when the pod
// has none).
func PodCondition(p *v1.Pod, typ v1.PodConditionType) v1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}
