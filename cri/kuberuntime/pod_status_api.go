package kuberuntime

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages/podrules"
)

// Waiting reasons that are not failures.
const (
	reasonContainerCreating = "ContainerCreating"
	reasonPodInitializing   = "PodInitializing"
)

// GeneratePodStatus turns the runtime status into the API status: phase,
// IPs, start time, init and regular container statuses (waiting reasons
// from the last sync's failures) and the PodScheduled, Initialized and
// PodReadyToStartContainers conditions. Readiness is left to the status
// actor: every container is ready=false here.
func (m *Manager) GeneratePodStatus(pod *v1.Pod, status *cri.PodStatus) v1.PodStatus {
	if status == nil {
		status = &cri.PodStatus{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
	}
	out := v1.PodStatus{HostIP: m.opts.HostIP}
	if m.opts.HostIP != "" {
		out.HostIPs = []v1.HostIP{{IP: m.opts.HostIP}}
	}
	ips := status.IPs
	if pod.Spec.HostNetwork && m.opts.HostIP != "" {
		ips = []string{m.opts.HostIP}
	}
	if len(ips) > 0 {
		out.PodIP = ips[0]
		for _, ip := range ips {
			out.PodIPs = append(out.PodIPs, v1.PodIP{IP: ip})
		}
	}
	var oldest int64
	for _, s := range status.SandboxStatuses {
		if oldest == 0 || (s.GetCreatedAt() != 0 && s.GetCreatedAt() < oldest) {
			oldest = s.GetCreatedAt()
		}
	}
	if oldest != 0 {
		t := metav1.NewTime(unixNanoTime(oldest))
		out.StartTime = &t
	}

	out.InitContainerStatuses = m.apiContainerStatuses(pod, pod.Spec.InitContainers, status, true)
	out.ContainerStatuses = m.apiContainerStatuses(pod, pod.Spec.Containers, status, false)
	if len(pod.Spec.EphemeralContainers) > 0 {
		eph := make([]v1.Container, len(pod.Spec.EphemeralContainers))
		for i := range pod.Spec.EphemeralContainers {
			eph[i] = *ephemeralContainer(&pod.Spec.EphemeralContainers[i])
		}
		out.EphemeralContainerStatuses = m.apiContainerStatuses(pod, eph, status, true)
	}

	pendingInit := incompleteInitContainers(pod, out.InitContainerStatuses, out.ContainerStatuses)
	if len(pendingInit) > 0 {
		for i := range out.ContainerStatuses {
			if w := out.ContainerStatuses[i].State.Waiting; w != nil && w.Reason == reasonContainerCreating {
				w.Reason = reasonPodInitializing
			}
		}
	}
	m.redactStatus(pod, &out)
	limitTerminationMessages(pod, &out)
	out.Phase = podPhase(pod, out.InitContainerStatuses, out.ContainerStatuses)
	out.Conditions = m.podConditions(pod, status, pendingInit)
	return out
}

// apiContainerStatuses builds the status of each spec container from its
// instances (newest first), overlaying the reason cache.
func (m *Manager) apiContainerStatuses(pod *v1.Pod, specs []v1.Container, status *cri.PodStatus, init bool) []v1.ContainerStatus {
	if len(specs) == 0 {
		return nil
	}
	runtimeName := m.cachedRuntimeName()
	out := make([]v1.ContainerStatus, 0, len(specs))
	for i := range specs {
		c := &specs[i]
		var instances []*cri.ContainerStatus
		for _, cs := range status.ContainerStatuses {
			if cs.Name == c.Name {
				instances = append(instances, cs)
			}
		}
		s := v1.ContainerStatus{Name: c.Name, Image: c.Image}
		if len(instances) == 0 {
			s.State.Waiting = &v1.ContainerStateWaiting{Reason: defaultWaitingReason(pod)}
		} else {
			cur := instances[0]
			s.ContainerID = runtimeName + "://" + cur.ID
			s.ImageID = cur.ImageID
			s.RestartCount = int32(cur.RestartCount)
			s.State = apiContainerState(cur, runtimeName)
			started := cur.State == cri.ContainerStateRunning
			s.Started = &started
			if len(instances) > 1 {
				s.LastTerminationState = apiContainerState(instances[1], runtimeName)
			}
		}
		if r, ok := m.reasons.get(pod.UID, c.Name); ok && s.State.Running == nil && m.willRestart(c, pod, status, init) {
			if s.State.Terminated != nil {
				s.LastTerminationState = s.State
			}
			s.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: r.reason, Message: r.message}}
		}
		out = append(out, s)
	}
	return out
}

// defaultWaitingReason is the state of a container never created: as in
// the kubelet's convertToAPIContainerStatuses, PodInitializing for every
// container (init ones included) of a pod with init containers,
// ContainerCreating otherwise.
func defaultWaitingReason(pod *v1.Pod) string {
	if len(pod.Spec.InitContainers) > 0 {
		return reasonPodInitializing
	}
	return reasonContainerCreating
}

// willRestart says whether a non-running container gets another instance.
func (m *Manager) willRestart(c *v1.Container, pod *v1.Pod, status *cri.PodStatus, init bool) bool {
	if !init {
		return shouldContainerBeRestarted(c, pod, status)
	}
	cs := status.FindContainerStatusByName(c.Name)
	if cs == nil || cs.State != cri.ContainerStateExited || IsSidecar(c) {
		return pod.DeletionTimestamp == nil
	}
	return cs.ExitCode != 0 && shouldRestartOnFailure(pod) && pod.DeletionTimestamp == nil
}

func apiContainerState(cs *cri.ContainerStatus, runtimeName string) v1.ContainerState {
	switch cs.State {
	case cri.ContainerStateRunning:
		return v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(cs.StartedAt)}}
	case cri.ContainerStateExited:
		reason := cs.Reason
		if reason == "" {
			reason = "Completed"
			if cs.ExitCode != 0 {
				reason = "Error"
			}
		}
		return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			ExitCode:    int32(cs.ExitCode),
			Reason:      reason,
			Message:     cs.Message,
			StartedAt:   metav1.NewTime(cs.StartedAt),
			FinishedAt:  metav1.NewTime(cs.FinishedAt),
			ContainerID: runtimeName + "://" + cs.ID,
		}}
	case cri.ContainerStateCreated:
		return v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reasonContainerCreating}}
	}
	return v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerStatusUnknown", Message: "The runtime reports the container state as unknown"}}
}

// incompleteInitContainers names the init containers that have not exited
// 0 yet, and the sidecars not running yet (none once a regular container
// has run). Whether a sidecar's startup probe succeeded is the status
// actor's to add: it has the probe results.
func incompleteInitContainers(pod *v1.Pod, inits, regular []v1.ContainerStatus) []string {
	for _, s := range regular {
		if s.State.Running != nil || s.State.Terminated != nil || s.LastTerminationState.Terminated != nil {
			return nil
		}
	}
	var pending []string
	for i, s := range inits {
		if i < len(pod.Spec.InitContainers) && IsSidecar(&pod.Spec.InitContainers[i]) {
			if s.State.Running == nil {
				pending = append(pending, s.Name)
			}
			continue
		}
		if t := s.State.Terminated; t != nil && t.ExitCode == 0 {
			continue
		}
		pending = append(pending, s.Name)
	}
	return pending
}

// podPhase derives the phase from the container statuses and restartPolicy.
// A running sidecar counts as running (the pod is Running while only
// sidecars are left); a stopped sidecar does not count: a job-style pod
// whose regular containers succeeded is Succeeded once its sidecars were
// stopped, whatever their exit codes.
func podPhase(pod *v1.Pod, inits, regular []v1.ContainerStatus) v1.PodPhase {
	pendingInit, failedInit := 0, 0
	initDone := len(incompleteInitContainers(pod, inits, regular)) == 0
	if !initDone {
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

func (m *Manager) podConditions(pod *v1.Pod, status *cri.PodStatus, pendingInit []string) []v1.PodCondition {
	initialized := podrules.InitializedCondition(pendingInit)
	sandboxReady := v1.PodCondition{Type: v1.PodReadyToStartContainers, Status: v1.ConditionFalse}
	if len(status.SandboxStatuses) > 0 {
		s := status.SandboxStatuses[0]
		if s.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY && (pod.Spec.HostNetwork || len(status.IPs) > 0) {
			sandboxReady.Status = v1.ConditionTrue
		}
	}
	conds := []v1.PodCondition{
		{Type: v1.PodScheduled, Status: v1.ConditionTrue},
		initialized,
		sandboxReady,
	}
	now := metav1.NewTime(m.opts.Clock.Now())
	for i := range conds {
		conds[i].LastTransitionTime = now
		for _, old := range pod.Status.Conditions {
			if old.Type == conds[i].Type && old.Status == conds[i].Status {
				conds[i].LastTransitionTime = old.LastTransitionTime
			}
		}
	}
	return conds
}
