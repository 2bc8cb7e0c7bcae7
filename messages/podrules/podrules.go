// Package podrules holds the pod rules every part of actorlet applies the
// same way (the kubelet's and the API server's): defaults a pod gets when
// its spec leaves them out, the node's default pod capacity, which phases
// are terminal, the phase a pod's containers give it (PodPhase), which
// init containers are incomplete and the Initialized condition. It depends
// on the Kubernetes API types only, so the agent, the runtime manager and
// actorletctl share it.
package podrules

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// DefaultGracePeriodSeconds is a pod's termination grace period when its
// spec sets none.
const DefaultGracePeriodSeconds int64 = 30

// DefaultMaxPods is a node's pod capacity when not configured.
const DefaultMaxPods = 110

// Probe defaults, as in the Kubernetes API.
const (
	DefaultProbePeriodSeconds    int32 = 10
	DefaultProbeTimeoutSeconds   int32 = 1
	DefaultProbeSuccessThreshold int32 = 1
	DefaultProbeFailureThreshold int32 = 3
)

// IsTerminal reports whether phase is Succeeded or Failed: a pod in it
// never runs again and never leaves it.
func IsTerminal(phase v1.PodPhase) bool {
	return phase == v1.PodSucceeded || phase == v1.PodFailed
}

// ReasonContainersNotInitialized is the reason of a False Initialized
// condition.
const ReasonContainersNotInitialized = "ContainersNotInitialized"

// InitializedCondition is the pod's Initialized condition given the init
// containers that have not completed (in spec order): True when there are
// none.
func InitializedCondition(incomplete []string) v1.PodCondition {
	if len(incomplete) == 0 {
		return v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue}
	}
	return v1.PodCondition{
		Type:    v1.PodInitialized,
		Status:  v1.ConditionFalse,
		Reason:  ReasonContainersNotInitialized,
		Message: fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(incomplete, " ")),
	}
}

// IsSidecar reports whether c is a restartable init container (a sidecar:
// an init container with restartPolicy Always). It restarts whatever the
// pod's restartPolicy.
func IsSidecar(c *v1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// IncompleteInitContainers names, in spec order, the init containers of
// pod whose status in s is missing or has not exited 0, and the sidecars
// not started yet (Started: running, and past its startup probe once the
// status actor applied the probes); none once a regular container has run
// (initialization finished earlier; a sidecar may be restarting).
func IncompleteInitContainers(pod *v1.Pod, s *v1.PodStatus) []string {
	for _, cs := range s.ContainerStatuses {
		if cs.State.Running != nil || cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil {
			return nil
		}
	}
	var pending []string
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs := FindStatus(s.InitContainerStatuses, c.Name)
		switch {
		case cs == nil:
			pending = append(pending, c.Name)
		case IsSidecar(c):
			if cs.Started == nil || !*cs.Started {
				pending = append(pending, c.Name)
			}
		case cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0:
			pending = append(pending, c.Name)
		}
	}
	return pending
}

// FindStatus returns the status of the container named name, or nil.
func FindStatus(statuses []v1.ContainerStatus, name string) *v1.ContainerStatus {
	for i := range statuses {
		if statuses[i].Name == name {
			return &statuses[i]
		}
	}
	return nil
}

// PodPhase is the phase of pod given the API statuses of its containers
// and its restartPolicy (the kubelet's getPhase). A running sidecar counts
// as running (the pod is Running while only sidecars are left); a stopped
// sidecar does not count: a job-style pod whose regular containers
// succeeded is Succeeded once its sidecars were stopped, whatever their
// exit codes. It never looks at s.Phase: phases that do not come from the
// containers (an eviction, a deadline, a rejection) are their owners'.
func PodPhase(pod *v1.Pod, s *v1.PodStatus) v1.PodPhase {
	inits, regular := s.InitContainerStatuses, s.ContainerStatuses
	pendingInit, failedInit := 0, 0
	if len(IncompleteInitContainers(pod, s)) > 0 {
		for i, s := range inits {
			if i < len(pod.Spec.InitContainers) && IsSidecar(&pod.Spec.InitContainers[i]) {
				if s.State.Running == nil {
					pendingInit++
				}
				continue
			}
			switch {
			case s.State.Terminated != nil && s.State.Terminated.ExitCode == 0:
			case s.State.Terminated != nil:
				failedInit++
			case s.State.Waiting != nil && s.LastTerminationState.Terminated != nil && s.LastTerminationState.Terminated.ExitCode != 0:
				failedInit++
			default:
				pendingInit++
			}
		}
	}
	if failedInit > 0 && pod.Spec.RestartPolicy == v1.RestartPolicyNever {
		return v1.PodFailed
	}
	if pendingInit > 0 || failedInit > 0 {
		return v1.PodPending
	}
	unknown, running, waiting, stopped, succeeded := 0, 0, 0, 0, 0
	for i, s := range inits {
		if i < len(pod.Spec.InitContainers) && IsSidecar(&pod.Spec.InitContainers[i]) && s.State.Running != nil {
			running++
		}
	}
	for _, s := range regular {
		switch {
		case s.State.Running != nil:
			running++
		case s.State.Terminated != nil:
			stopped++
			if s.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case s.State.Waiting != nil && s.LastTerminationState.Terminated != nil:
			stopped++ // restarting
		case s.State.Waiting != nil:
			waiting++
		default:
			unknown++
		}
	}
	switch {
	case waiting > 0:
		return v1.PodPending
	case running > 0 && unknown == 0:
		return v1.PodRunning
	case stopped == len(regular) && stopped > 0 && unknown == 0:
		if pod.Spec.RestartPolicy == v1.RestartPolicyAlways {
			return v1.PodRunning
		}
		if stopped == succeeded {
			return v1.PodSucceeded
		}
		if pod.Spec.RestartPolicy == v1.RestartPolicyNever {
			return v1.PodFailed
		}
		return v1.PodRunning
	}
	return v1.PodPending
}
