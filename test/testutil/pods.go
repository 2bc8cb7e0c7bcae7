package testutil

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

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
