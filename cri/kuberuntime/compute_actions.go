package kuberuntime

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages/podrules"
)

// containerToKill is a running container the sync stops, and why.
type containerToKill struct {
	name    string
	spec    *v1.Container
	message string
	reason  string // event reason detail: spec changed, probe failed, …
	// grace, when set, is the probe's own terminationGracePeriodSeconds.
	grace *int64
}

// probeGrace is the grace period of a kill for a failed probe: the failed
// probe's terminationGracePeriodSeconds when set (and the pod is not being
// deleted, whose grace wins), else nil (the pod's).
func probeGrace(pod *v1.Pod, c *v1.Container, startup bool) *int64 {
	if pod.DeletionGracePeriodSeconds != nil {
		return nil
	}
	p := c.LivenessProbe
	if startup {
		p = c.StartupProbe
	}
	if p == nil || p.TerminationGracePeriodSeconds == nil {
		return nil
	}
	g := max(*p.TerminationGracePeriodSeconds, minimumGracePeriod)
	return &g
}

// podActions is what one sync must do to bring the runtime to the pod spec.
type podActions struct {
	// KillPod stops every container and the sandbox(es) first.
	KillPod bool
	// CreateSandbox starts a new sandbox with Attempt.
	CreateSandbox bool
	SandboxID     string
	Attempt       uint32
	// InitContainersToStart are indexes into pod.Spec.InitContainers, in
	// spec order: the next init container and sidecars to (re)start.
	InitContainersToStart []int
	// InitFailed: an init container failed and the pod must not restart it.
	InitFailed bool
	// ContainersToStart are indexes into pod.Spec.Containers.
	ContainersToStart []int
	// EphemeralContainersToStart are indexes into
	// pod.Spec.EphemeralContainers: those never started (an ephemeral
	// container runs once and is never restarted).
	EphemeralContainersToStart []int
	// ContainersToKill maps container IDs to stop.
	ContainersToKill map[string]containerToKill
}

func (a podActions) String() string {
	return fmt.Sprintf("KillPod=%t CreateSandbox=%t Attempt=%d StartInit=%v Start=%v StartEphemeral=%v Kill=%d",
		a.KillPod, a.CreateSandbox, a.Attempt, a.InitContainersToStart, a.ContainersToStart, a.EphemeralContainersToStart, len(a.ContainersToKill))
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

// hasSidecars reports whether pod has a restartable init container.
func hasSidecars(pod *v1.Pod) bool {
	for i := range pod.Spec.InitContainers {
		if podrules.IsSidecar(&pod.Spec.InitContainers[i]) {
			return true
		}
	}
	return false
}

// computeInitContainerActions decides, as the kubelet does, which init
// containers to (re)start and reports whether the pod is initialized, so
// regular containers may be looked at. Init containers run in order; a
// regular one must exit 0 before the next starts; a sidecar lets the next
// one start once it runs and its startup probe (if any) succeeded, and is
// restarted whenever it exits, whatever the pod's restartPolicy.
//
// The walk goes from the last init container backwards: instances of
// finished init containers may have been garbage-collected, so the
// furthest one that ran decides where initialization stands. Once past it,
// only sidecars matter (they keep running for the pod's life).
func computeInitContainerActions(pod *v1.Pod, status *cri.PodStatus, probes cri.Probes, a *podActions) bool {
	inits := pod.Spec.InitContainers
	if len(inits) == 0 {
		return true
	}
	// A regular container created or running means initialization
	// finished earlier (exited ones may be from a previous sandbox).
	initialized := false
	for i := range pod.Spec.Containers {
		cs := status.FindContainerStatusByName(pod.Spec.Containers[i].Name)
		if cs != nil && (cs.State == cri.ContainerStateRunning || cs.State == cri.ContainerStateCreated) {
			initialized = true
			break
		}
	}
	passed := initialized // an init container after this one already ran
	restartOnFailure := shouldRestartOnFailure(pod)
	var toStart []int
	kill := func(cs *cri.ContainerStatus, c *v1.Container, message, reason string) {
		k := containerToKill{name: c.Name, spec: c, message: message, reason: reason}
		if reason == "probe failed" {
			k.grace = probeGrace(pod, c, probes[cs.ID].Startup)
		}
		a.ContainersToKill[cs.ID] = k
	}
	for i := len(inits) - 1; i >= 0; i-- {
		c := &inits[i]
		sidecar := podrules.IsSidecar(c)
		cs := status.FindContainerStatusByName(c.Name)
		if cs == nil {
			if passed && sidecar {
				toStart = append(toStart, i) // its instance is gone: start it again
			}
			continue
		}
		if passed && !sidecar {
			continue // done long ago; only sidecars keep running
		}
		switch cs.State {
		case cri.ContainerStateCreated:
			// Created and started happen in one step: a created instance
			// failed to start. Start it again rather than leave it stuck.
			toStart = append(toStart, i)
		case cri.ContainerStateRunning:
			if !sidecar {
				break // wait for it to exit
			}
			if c.StartupProbe != nil && !probes.Started(cs.ID) {
				if msg, failed := probes.Failed(cs.ID); failed {
					kill(cs, c, withProbeMessage(fmt.Sprintf("Init container %s failed startup probe", c.Name), msg), "probe failed")
					toStart = append(toStart, i)
				}
				break // wait for the startup probe
			}
			if i == len(inits)-1 {
				initialized = true
			} else if !passed {
				toStart = append(toStart, i+1) // started for the first time: on to the next
			}
			if cs.Hash != hashContainer(c) {
				kill(cs, c, fmt.Sprintf("Init container %s definition changed", c.Name), "spec changed")
				toStart = append(toStart, i)
				break
			}
			if msg, failed := probes.Failed(cs.ID); failed {
				kill(cs, c, withProbeMessage(fmt.Sprintf("Init container %s failed liveness probe", c.Name), msg), "probe failed")
				toStart = append(toStart, i)
			}
		case cri.ContainerStateExited:
			if sidecar {
				toStart = append(toStart, i) // restarted whatever the pod's policy
				break
			}
			if isInitContainerFailed(cs) {
				if !restartOnFailure {
					a.KillPod, a.InitFailed = true, true
					a.InitContainersToStart = nil
					return false
				}
				toStart = append(toStart, i)
				break
			}
			if i == len(inits)-1 {
				initialized = true
			} else {
				toStart = append(toStart, i+1)
			}
		default: // unknown
			if !sidecar && !restartOnFailure {
				a.KillPod, a.InitFailed = true, true
				a.InitContainersToStart = nil
				return false
			}
			kill(cs, c, fmt.Sprintf("Init container is in %q state, try killing it", cs.State), "unknown state")
			toStart = append(toStart, i)
		}
		passed = true
	}
	if !passed {
		toStart = append(toStart, 0) // none ran yet
	}
	// The walk went backwards; start them in spec order.
	for l, r := 0, len(toStart)-1; l < r; l, r = l+1, r-1 {
		toStart[l], toStart[r] = toStart[r], toStart[l]
	}
	if pod.DeletionTimestamp == nil {
		a.InitContainersToStart = toStart
	}
	return initialized
}

func withProbeMessage(message, why string) string {
	if why == "" {
		return message
	}
	return message + ": " + why
}

// computePodActions compares pod with its runtime status. probes holds the
// liveness/startup failures and startup successes by container ID.
func computePodActions(pod *v1.Pod, status *cri.PodStatus, probes cri.Probes) podActions {
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
			actions.InitContainersToStart = []int{0}
			return actions
		}
		actions.ContainersToStart = toStart
		return actions
	}

	if initialized := computeInitContainerActions(pod, status, probes, &actions); actions.KillPod || !initialized {
		return actions // initialization failed or still going
	}
	if pod.DeletionTimestamp == nil {
		for i := range pod.Spec.EphemeralContainers {
			if status.FindContainerStatusByName(pod.Spec.EphemeralContainers[i].Name) == nil {
				actions.EphemeralContainersToStart = append(actions.EphemeralContainersToStart, i)
			}
		}
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
		var grace *int64
		if h := hashContainer(c); cs.Hash != h {
			message = fmt.Sprintf("Container %s definition changed", c.Name)
			reason = "spec changed"
			restart = true
		} else if msg, failed := probes.Failed(cs.ID); failed {
			message = withProbeMessage(fmt.Sprintf("Container %s failed a liveness or startup probe, will be restarted", c.Name), msg)
			reason = "probe failed"
			grace = probeGrace(pod, c, probes[cs.ID].Startup)
		} else {
			keep++
			continue
		}
		if restart && pod.DeletionTimestamp == nil {
			actions.ContainersToStart = append(actions.ContainersToStart, i)
		}
		actions.ContainersToKill[cs.ID] = containerToKill{name: c.Name, spec: c, message: message, reason: reason, grace: grace}
	}
	if keep == 0 && len(actions.ContainersToStart) == 0 {
		// Every regular container is done: the pod stops, and sidecars are
		// not restarted to keep it alive.
		actions.KillPod = true
		actions.InitContainersToStart = nil
	}
	return actions
}
