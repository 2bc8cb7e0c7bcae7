package kuberuntime

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
)

// containerToKill is a running container the sync stops, and why.
type containerToKill struct {
	name    string
	spec    *v1.Container
	message string
	reason  string // event reason detail: spec changed, probe failed, …
}

// podActions is what one sync must do to bring the runtime to the pod spec.
type podActions struct {
	// KillPod stops every container and the sandbox(es) first.
	KillPod bool
	// CreateSandbox starts a new sandbox with Attempt.
	CreateSandbox bool
	SandboxID     string
	Attempt       uint32
	// NextInitContainer is the init container to start, if any.
	NextInitContainer *v1.Container
	// InitFailed: an init container failed and the pod must not restart it.
	InitFailed bool
	// ContainersToStart are indexes into pod.Spec.Containers.
	ContainersToStart []int
	// ContainersToKill maps container IDs to stop.
	ContainersToKill map[string]containerToKill
}

func (a podActions) String() string {
	next := ""
	if a.NextInitContainer != nil {
		next = a.NextInitContainer.Name
	}
	return fmt.Sprintf("KillPod=%t CreateSandbox=%t Attempt=%d NextInit=%q Start=%v Kill=%d",
		a.KillPod, a.CreateSandbox, a.Attempt, next, a.ContainersToStart, len(a.ContainersToKill))
}

// shouldRestartOnFailure: the pod restarts failed containers.
func shouldRestartOnFailure(pod *v1.Pod) bool {
	return pod.Spec.RestartPolicy != v1.RestartPolicyNever
}

// containerSucceeded: the container's newest instance exited 0.
func containerSucceeded(c *v1.Container, status *cri.PodStatus) bool {
	cs := status.FindContainerStatusByName(c.Name)
	return cs != nil && cs.State == cri.ContainerStateExited && cs.ExitCode == 0
}

// shouldContainerBeRestarted decides whether a non-running container gets a
// new instance under the pod's restart policy.
func shouldContainerBeRestarted(c *v1.Container, pod *v1.Pod, status *cri.PodStatus) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	cs := status.FindContainerStatusByName(c.Name)
	if cs == nil {
		return true // never ran
	}
	switch cs.State {
	case cri.ContainerStateRunning:
		return false
	case cri.ContainerStateCreated, cri.ContainerStateUnknown:
		return true
	}
	switch pod.Spec.RestartPolicy {
	case v1.RestartPolicyNever:
		return false
	case v1.RestartPolicyOnFailure:
		return cs.ExitCode != 0
	}
	return true
}

// podSandboxChanged reports whether a new sandbox is needed and its attempt:
// none exists, more than one is ready, the newest is not ready, its network
// mode differs from the spec, or a pod-network sandbox has no IP.
func podSandboxChanged(pod *v1.Pod, status *cri.PodStatus) (changed bool, attempt uint32, sandboxID string) {
	if status == nil || len(status.SandboxStatuses) == 0 {
		return true, 0, ""
	}
	ready := 0
	for _, s := range status.SandboxStatuses {
		if s.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			ready++
		}
	}
	s := status.SandboxStatuses[0]
	next := s.GetMetadata().GetAttempt() + 1
	switch {
	case ready > 1:
		return true, next, s.Id
	case s.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY:
		return true, next, s.Id
	case s.GetLinux().GetNamespaces().GetOptions().GetNetwork() != networkMode(pod):
		return true, next, ""
	case !pod.Spec.HostNetwork && s.GetNetwork().GetIp() == "":
		return true, next, s.Id
	}
	return false, s.GetMetadata().GetAttempt(), s.Id
}

// isInitContainerFailed: the init container ended without success.
func isInitContainerFailed(cs *cri.ContainerStatus) bool {
	return (cs.State == cri.ContainerStateExited && cs.ExitCode != 0) || cs.State == cri.ContainerStateUnknown
}

// findNextInitContainer walks the init containers in order. It returns the
// status of the last one that ran, the next one to start (nil while one is
// running), and done once all exited 0.
func findNextInitContainer(pod *v1.Pod, status *cri.PodStatus) (last *cri.ContainerStatus, next *v1.Container, done bool) {
	inits := pod.Spec.InitContainers
	if len(inits) == 0 {
		return nil, nil, true
	}
	// A regular container already running means initialization finished
	// earlier (init instances may have been garbage-collected since).
	for i := range pod.Spec.Containers {
		if cs := status.FindContainerStatusByName(pod.Spec.Containers[i].Name); cs != nil && cs.State == cri.ContainerStateRunning {
			return nil, nil, true
		}
	}
	// The furthest init container that ran decides: running → wait,
	// failed → retry it, succeeded → start the one after it.
	for i := len(inits) - 1; i >= 0; i-- {
		cs := status.FindContainerStatusByName(inits[i].Name)
		switch {
		case cs == nil:
			continue
		case isInitContainerFailed(cs), cs.State == cri.ContainerStateCreated:
			return cs, &inits[i], false // failed, or created but never started
		case cs.State != cri.ContainerStateExited:
			return cs, nil, false
		case i == len(inits)-1:
			return cs, nil, true
		default:
			return cs, &inits[i+1], false
		}
	}
	return nil, &inits[0], false
}

// computePodActions compares pod with its runtime status. failedProbes maps
// the IDs of containers whose liveness or startup probe failed to why.
func computePodActions(pod *v1.Pod, status *cri.PodStatus, failedProbes map[string]string) podActions {
	createSandbox, attempt, sandboxID := podSandboxChanged(pod, status)
	actions := podActions{
		KillPod:          createSandbox,
		CreateSandbox:    createSandbox,
		SandboxID:        sandboxID,
		Attempt:          attempt,
		ContainersToKill: map[string]containerToKill{},
	}

	if createSandbox {
		if pod.DeletionTimestamp != nil {
			actions.CreateSandbox = false
			return actions
		}
		// A Never pod whose containers already ran is not started again.
		if !shouldRestartOnFailure(pod) && attempt != 0 && status != nil && len(status.ContainerStatuses) != 0 {
			actions.CreateSandbox = false
			return actions
		}
		var toStart []int
		for i := range pod.Spec.Containers {
			c := &pod.Spec.Containers[i]
			if pod.Spec.RestartPolicy == v1.RestartPolicyOnFailure && containerSucceeded(c, status) {
				continue
			}
			toStart = append(toStart, i)
		}
		if len(toStart) == 0 {
			actions.CreateSandbox = false // every container already succeeded
			return actions
		}
		if len(pod.Spec.InitContainers) != 0 {
			actions.NextInitContainer = &pod.Spec.InitContainers[0]
			return actions
		}
		actions.ContainersToStart = toStart
		return actions
	}

	last, next, done := findNextInitContainer(pod, status)
	if !done {
		if next != nil {
			if last != nil && isInitContainerFailed(last) && !shouldRestartOnFailure(pod) {
				actions.KillPod = true
				actions.InitFailed = true
			} else if pod.DeletionTimestamp == nil {
				actions.NextInitContainer = next
			}
		}
		return actions
	}

	keep := 0
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cs := status.FindContainerStatusByName(c.Name)
		if cs == nil || cs.State != cri.ContainerStateRunning {
			if shouldContainerBeRestarted(c, pod, status) {
				actions.ContainersToStart = append(actions.ContainersToStart, i)
			}
			continue
		}
		restart := shouldRestartOnFailure(pod)
		var message, reason string
		if h := hashContainer(c); cs.Hash != h {
			message = fmt.Sprintf("Container %s definition changed", c.Name)
			reason = "spec changed"
			restart = true
		} else if msg, failed := failedProbes[cs.ID]; failed {
			message = fmt.Sprintf("Container %s failed a liveness or startup probe, will be restarted", c.Name)
			if msg != "" {
				message += ": " + msg
			}
			reason = "probe failed"
		} else {
			keep++
			continue
		}
		if restart && pod.DeletionTimestamp == nil {
			actions.ContainersToStart = append(actions.ContainersToStart, i)
		}
		actions.ContainersToKill[cs.ID] = containerToKill{name: c.Name, spec: c, message: message, reason: reason}
	}
	if keep == 0 && len(actions.ContainersToStart) == 0 {
		actions.KillPod = true
	}
	return actions
}
