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

// ConvertPodStatus turns the runtime status into what the API status
// takes from the runtime (the kubelet's ConvertPodStatusToAPIPodStatus):
// IPs, host IP, start time, init, regular and ephemeral container statuses
// (waiting reasons from the last sync's failures), and whether the sandbox
// is ready. The phase (podrules.PodPhase) and the conditions (the status
// actor) are not the runtime's; readiness neither: every container is
// ready=false here.
func (m *Manager) ConvertPodStatus(pod *v1.Pod, status *cri.PodStatus) cri.APIPodStatus {
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

	if len(podrules.IncompleteInitContainers(pod, &out)) > 0 {
		for i := range out.ContainerStatuses {
			if w := out.ContainerStatuses[i].State.Waiting; w != nil && w.Reason == reasonContainerCreating {
				w.Reason = reasonPodInitializing
			}
		}
	}
	m.redactStatus(pod, &out)
	limitTerminationMessages(pod, &out)
	return cri.APIPodStatus{Status: out, SandboxReady: sandboxReady(pod, status)}
}

// sandboxReady reports whether the pod's newest sandbox is ready and has
// its network: an IP, or the host's network.
func sandboxReady(pod *v1.Pod, status *cri.PodStatus) bool {
	if len(status.SandboxStatuses) == 0 {
		return false
	}
	s := status.SandboxStatuses[0]
	return s.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY && (pod.Spec.HostNetwork || len(status.IPs) > 0)
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
	if cs == nil || cs.State != cri.ContainerStateExited || podrules.IsSidecar(c) {
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
