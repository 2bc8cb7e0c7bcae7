package main

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/actorlet/actorlet/messages/podrules"
)

// podReason is the STATUS column: like kubectl, the most telling of the
// pod's reason, an init container's state, a container's waiting or
// terminated reason, "Terminating", or the phase.
func podReason(p *v1.Pod) string {
	reason := string(p.Status.Phase)
	if reason == "" {
		reason = "Pending"
	}
	if p.Status.Reason != "" {
		reason = p.Status.Reason
	}
	initializing := false
	for i, cs := range p.Status.InitContainerStatuses {
		switch {
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0:
			continue
		case isSidecar(p, cs.Name) && cs.Started != nil && *cs.Started:
			continue // a started sidecar has done its part of initialization
		case cs.State.Terminated != nil:
			reason = "Init:" + orElse(cs.State.Terminated.Reason, fmt.Sprintf("ExitCode:%d", cs.State.Terminated.ExitCode))
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "" && cs.State.Waiting.Reason != "PodInitializing":
			reason = "Init:" + cs.State.Waiting.Reason
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(p.Spec.InitContainers))
		}
		initializing = true
		break
	}
	if !initializing || podInitialized(p) {
		hasRunning := false
		for i := len(p.Status.ContainerStatuses) - 1; i >= 0; i-- {
			cs := p.Status.ContainerStatuses[i]
			switch {
			case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
				reason = cs.State.Waiting.Reason
			case cs.State.Terminated != nil && cs.State.Terminated.Reason != "":
				reason = cs.State.Terminated.Reason
			case cs.State.Terminated != nil && cs.State.Terminated.Signal != 0:
				reason = fmt.Sprintf("Signal:%d", cs.State.Terminated.Signal)
			case cs.State.Terminated != nil:
				reason = fmt.Sprintf("ExitCode:%d", cs.State.Terminated.ExitCode)
			case cs.Ready && cs.State.Running != nil:
				hasRunning = true
			}
		}
		if reason == "Completed" && hasRunning {
			reason = "Running"
		}
	}
	// A pod ended by the node for a reason of its own (Evicted, a rejected
	// admission) says so rather than showing its killed containers' reason.
	if podrules.IsTerminal(p.Status.Phase) && p.Status.Reason != "" {
		reason = p.Status.Reason
	}
	if p.DeletionTimestamp != nil {
		reason = "Terminating"
	}
	return reason
}

// podReady is the READY column: ready/total containers, sidecars (init
// containers with restartPolicy Always) included, as kubectl counts.
func podReady(p *v1.Pod) string {
	ready, total := 0, len(p.Spec.Containers)
	for _, c := range p.Spec.InitContainers {
		if isSidecar(p, c.Name) {
			total++
		}
	}
	for _, cs := range p.Status.InitContainerStatuses {
		if cs.Ready && isSidecar(p, cs.Name) {
			ready++
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Ready {
			ready++
		}
	}
	return fmt.Sprintf("%d/%d", ready, total)
}

// isSidecar reports whether name is an init container of p with
// restartPolicy Always.
func isSidecar(p *v1.Pod, name string) bool {
	for _, c := range p.Spec.InitContainers {
		if c.Name == name {
			return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
		}
	}
	return false
}

// podInitialized: the pod's Initialized condition is True.
func podInitialized(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodInitialized {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// podRestarts is the RESTARTS column, with the age of the last restart.
func podRestarts(p *v1.Pod, now time.Time) string {
	n := int32(0)
	var last time.Time
	for _, cs := range append(append([]v1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		n += cs.RestartCount
		if t := cs.LastTerminationState.Terminated; t != nil && t.FinishedAt.After(last) {
			last = t.FinishedAt.Time
		}
	}
	if n > 0 && !last.IsZero() {
		return fmt.Sprintf("%d (%s ago)", n, age(last, now))
	}
	return fmt.Sprint(n)
}

// age is kubectl's short human duration since t.
func age(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// waitingReasons lists the containers' waiting reasons, for progress lines.
func waitingReasons(p *v1.Pod) string {
	var rs []string
	for _, cs := range append(append([]v1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			s := cs.Name + ": " + w.Reason
			if w.Message != "" {
				s += " (" + w.Message + ")"
			}
			rs = append(rs, s)
		}
	}
	return strings.Join(rs, ", ")
}

// failureReasons are waiting reasons --wait treats as a failed start.
var failureReasons = map[string]bool{
	"CrashLoopBackOff":           true,
	"ErrImagePull":               true,
	"ImagePullBackOff":           true,
	"InvalidImageName":           true,
	"ErrImageNeverPull":          true,
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
	"RunContainerError":          true,
	"RuntimeUnsupported":         true,
}

// podOutcome says whether a pod reached target (a --for state: "done"),
// failed ("failed" with why) or is still on its way ("").
func podOutcome(p *v1.Pod, target string) (string, string) {
	switch p.Status.Phase {
	case v1.PodFailed:
		return "failed", orElse(p.Status.Reason+": "+p.Status.Message, "phase Failed")
	case v1.PodSucceeded:
		if target == forReady {
			return "failed", "it completed (Succeeded) without being ready: a run-once pod is waited for with --for completed"
		}
		return "done", "Succeeded"
	}
	for _, cs := range append(append([]v1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && failureReasons[w.Reason] {
			return "failed", fmt.Sprintf("container %s: %s: %s", cs.Name, w.Reason, w.Message)
		}
	}
	if target == forCompleted || p.Status.Phase != v1.PodRunning || len(p.Status.ContainerStatuses) < len(p.Spec.Containers) {
		return "", ""
	}
	for _, cs := range p.Status.ContainerStatuses {
		started := cs.Started != nil && *cs.Started
		if !cs.Ready && (target == forReady || !started) {
			return "", ""
		}
	}
	if target == forReady {
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodReady && c.Status != v1.ConditionTrue {
				return "", ""
			}
		}
	}
	return "done", "Running"
}

func orElse(s, def string) string {
	if strings.Trim(s, ": ") == "" {
		return def
	}
	return s
}
