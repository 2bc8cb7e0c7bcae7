package status

import (
	"fmt"
	"sort"
	"strings"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/podrules"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition reasons, as the kubelet's.
const (
	ReasonContainersNotReady       = "ContainersNotReady"
	ReasonUnknownContainerStatuses = "UnknownContainerStatuses"
	ReasonPodCompleted             = "PodCompleted"
	ReasonPodFailed                = "PodFailed"
	ReasonReadinessGatesNotReady   = "ReadinessGatesNotReady"
)

// probeKey names one probe of one container.
type probeKey struct {
	container string
	kind      messages.ProbeKind
}

// probeResult is the last result of a probe for one container instance.
type probeResult struct {
	containerID string
	result      messages.ProbeResult
}

// probeResults are a pod's probe results.
type probeResults map[probeKey]probeResult

// succeeded reports whether the probe of that kind succeeded for the
// container instance with the given status ID ("<runtime>://<id>" or bare).
func (p probeResults) succeeded(name, statusID string, kind messages.ProbeKind) bool {
	r, ok := p[probeKey{name, kind}]
	if !ok || r.result != messages.ProbeSuccess {
		return false
	}
	return sameContainer(statusID, r.containerID)
}

func sameContainer(statusID, probeID string) bool {
	if probeID == "" || statusID == probeID {
		return true
	}
	return strings.HasSuffix(statusID, "://"+probeID)
}

// buildStatus is the status to publish for pod: the runtime view in
// computed (its phase set by the pod actor) and sandboxReady, with
// readiness from probes applied, every condition generated and the history
// rules (terminal phase, LastTransitionTime, StartTime) kept against the
// last published status old (nil if none).
func buildStatus(pod *v1.Pod, computed v1.PodStatus, sandboxReady bool, probes probeResults, old *v1.PodStatus, now metav1.Time) v1.PodStatus {
	s := *computed.DeepCopy()
	keepTerminal(pod, &s, old)
	applyContainerReadiness(pod, &s, probes)
	s.Conditions = generateConditions(pod, &s, sandboxReady)
	s.QOSClass = podQOS(pod)
	keepHistory(&s, old, now)
	return s
}

// rejectedStatus is the status of a pod admission refused.
func rejectedStatus(reason, message string, old *v1.PodStatus, now metav1.Time) v1.PodStatus {
	s := v1.PodStatus{Phase: v1.PodFailed, Reason: reason, Message: message}
	keepHistory(&s, old, now)
	return s
}

// keepTerminal stops a pod leaving a terminal phase, and a container
// leaving its terminated state when it may not restart.
func keepTerminal(pod *v1.Pod, s *v1.PodStatus, old *v1.PodStatus) {
	if old == nil {
		return
	}
	podTerminal := podrules.IsTerminal(old.Phase)
	if podTerminal && !podrules.IsTerminal(s.Phase) {
		s.Phase = old.Phase
	}
	if podTerminal && s.Reason == "" && s.Message == "" {
		s.Reason, s.Message = old.Reason, old.Message
	}
	keep := func(cur []v1.ContainerStatus, prev []v1.ContainerStatus) {
		for i := range cur {
			p := podrules.FindStatus(prev, cur[i].Name)
			if p == nil || p.State.Terminated == nil || cur[i].State.Terminated != nil {
				continue
			}
			if podTerminal || (!isSidecar(pod, cur[i].Name) && !mayRestart(pod.Spec.RestartPolicy, p.State.Terminated.ExitCode)) {
				cur[i].State = *p.State.DeepCopy()
			}
		}
	}
	keep(s.InitContainerStatuses, old.InitContainerStatuses)
	keep(s.ContainerStatuses, old.ContainerStatuses)
}

func mayRestart(policy v1.RestartPolicy, exitCode int32) bool {
	switch policy {
	case v1.RestartPolicyNever:
		return false
	case v1.RestartPolicyOnFailure:
		return exitCode != 0
	}
	return true
}

// isSidecar reports whether name is a restartable init container of pod:
// it restarts whatever the pod's restartPolicy.
func isSidecar(pod *v1.Pod, name string) bool {
	return podrules.IsSidecar(findContainer(pod.Spec.InitContainers, name))
}

func findContainer(containers []v1.Container, name string) *v1.Container {
	for i := range containers {
		if containers[i].Name == name {
			return &containers[i]
		}
	}
	return nil
}

// applyContainerReadiness sets started and ready on every container: an
// init container is ready once it exited 0; a regular one or a sidecar is
// started when running with its startup probe (if any) succeeded, and
// ready when started with its readiness probe (if any) succeeded.
func applyContainerReadiness(pod *v1.Pod, s *v1.PodStatus, probes probeResults) {
	probed := func(cs *v1.ContainerStatus, spec *v1.Container) {
		running := cs.State.Running != nil && !podrules.IsTerminal(s.Phase)
		started := running &&
			(spec == nil || spec.StartupProbe == nil || probes.succeeded(cs.Name, cs.ContainerID, messages.Startup))
		cs.Started = &started
		cs.Ready = started &&
			(spec == nil || spec.ReadinessProbe == nil || probes.succeeded(cs.Name, cs.ContainerID, messages.Readiness))
	}
	for i := range s.InitContainerStatuses {
		cs := &s.InitContainerStatuses[i]
		if isSidecar(pod, cs.Name) {
			probed(cs, findContainer(pod.Spec.InitContainers, cs.Name))
			continue
		}
		started := cs.State.Running != nil
		cs.Started = &started
		cs.Ready = cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
	}
	for i := range s.ContainerStatuses {
		cs := &s.ContainerStatuses[i]
		probed(cs, findContainer(pod.Spec.Containers, cs.Name))
	}
}

// generateConditions returns every condition of the pod, as the kubelet's
// generateAPIPodStatus orders them: PodReadyToStartContainers (the sandbox
// is ready), any other condition the status carries (a readiness gate's),
// Initialized, Ready, ContainersReady and PodScheduled.
func generateConditions(pod *v1.Pod, s *v1.PodStatus, sandboxReady bool) []v1.PodCondition {
	readyToStart := v1.PodCondition{Type: v1.PodReadyToStartContainers, Status: v1.ConditionFalse}
	if sandboxReady {
		readyToStart.Status = v1.ConditionTrue
	}
	conds := []v1.PodCondition{readyToStart}
	for _, c := range s.Conditions {
		switch c.Type {
		case v1.PodReadyToStartContainers, v1.PodInitialized, v1.PodReady, v1.ContainersReady, v1.PodScheduled:
		default:
			conds = append(conds, c)
		}
	}
	containersReady := containersReadyCondition(pod, s)
	return append(conds,
		initializedCondition(pod, s),
		podReadyCondition(pod, s, containersReady),
		containersReady,
		v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue},
	)
}

// initializedCondition is True once every init container exited 0 and
// every sidecar started (its startup probe, if any, succeeded), or once a
// regular container has run (initialization finished earlier; a sidecar
// may be restarting), or once the pod succeeded.
func initializedCondition(pod *v1.Pod, s *v1.PodStatus) v1.PodCondition {
	if s.Phase == v1.PodSucceeded {
		return podrules.InitializedCondition(nil)
	}
	return podrules.InitializedCondition(podrules.IncompleteInitContainers(pod, s))
}

// containersReadyCondition is True when every container of the spec, and
// every sidecar, has a ready status.
func containersReadyCondition(pod *v1.Pod, s *v1.PodStatus) v1.PodCondition {
	cond := v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse}
	if s.ContainerStatuses == nil {
		cond.Reason = ReasonUnknownContainerStatuses
		return cond
	}
	var unknown, unready []string
	for _, c := range pod.Spec.InitContainers {
		if !isSidecar(pod, c.Name) {
			continue
		}
		switch cs := podrules.FindStatus(s.InitContainerStatuses, c.Name); {
		case cs == nil:
			unknown = append(unknown, c.Name)
		case !cs.Ready:
			unready = append(unready, c.Name)
		}
	}
	for _, c := range pod.Spec.Containers {
		cs := podrules.FindStatus(s.ContainerStatuses, c.Name)
		switch {
		case cs == nil:
			unknown = append(unknown, c.Name)
		case !cs.Ready:
			unready = append(unready, c.Name)
		}
	}
	switch {
	case s.Phase == v1.PodSucceeded && len(unknown) == 0:
		cond.Reason = ReasonPodCompleted
		return cond
	case s.Phase == v1.PodFailed:
		cond.Reason = ReasonPodFailed
		return cond
	}
	var msgs []string
	if len(unknown) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with unknown status: [%s]", strings.Join(unknown, " ")))
	}
	if len(unready) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " ")))
	}
	if len(msgs) > 0 {
		cond.Reason = ReasonContainersNotReady
		cond.Message = strings.Join(msgs, ", ")
		return cond
	}
	cond.Status = v1.ConditionTrue
	return cond
}

// podReadyCondition is ContainersReady plus the pod's readiness gates.
func podReadyCondition(pod *v1.Pod, s *v1.PodStatus, containersReady v1.PodCondition) v1.PodCondition {
	cond := v1.PodCondition{Type: v1.PodReady, Status: containersReady.Status, Reason: containersReady.Reason, Message: containersReady.Message}
	if cond.Status != v1.ConditionTrue {
		return cond
	}
	var msgs []string
	for _, gate := range pod.Spec.ReadinessGates {
		var found *v1.PodCondition
		for i := range s.Conditions {
			if s.Conditions[i].Type == gate.ConditionType {
				found = &s.Conditions[i]
			}
		}
		switch {
		case found == nil:
			msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist", gate.ConditionType))
		case found.Status != v1.ConditionTrue:
			msgs = append(msgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", gate.ConditionType, found.Status))
		}
	}
	if len(msgs) > 0 {
		cond.Status = v1.ConditionFalse
		cond.Reason = ReasonReadinessGatesNotReady
		cond.Message = strings.Join(msgs, ", ")
	}
	return cond
}

// keepHistory carries over what must not change: LastTransitionTime of a
// condition whose status did not flip, and StartTime once set.
func keepHistory(s *v1.PodStatus, old *v1.PodStatus, now metav1.Time) {
	for i := range s.Conditions {
		c := &s.Conditions[i]
		var prev *v1.PodCondition
		if old != nil {
			for j := range old.Conditions {
				if old.Conditions[j].Type == c.Type {
					prev = &old.Conditions[j]
				}
			}
		}
		switch {
		case prev != nil && prev.Status == c.Status:
			c.LastTransitionTime = prev.LastTransitionTime
		case prev != nil || c.LastTransitionTime.IsZero():
			c.LastTransitionTime = now
		}
	}
	switch {
	case old != nil && old.StartTime != nil && !old.StartTime.IsZero():
		t := *old.StartTime
		s.StartTime = &t
	case s.StartTime == nil || s.StartTime.IsZero():
		t := now
		s.StartTime = &t
	}
}

// sortedByName orders published statuses by namespace and name.
func sortedByName(list []messages.PodStatusChanged) {
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i].Pod, list[j].Pod
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
}
