package kuberuntime

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
)

// GetPodStatus reads the runtime status of one pod: its sandboxes (newest
// first), the IPs of the newest ready sandbox, and every container instance
// (newest first).
func (m *Manager) GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*cri.PodStatus, error) {
	m.runtimeNameFor(ctx)
	sandboxes, err := m.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{LabelPodUID: string(uid)},
	})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes of pod %s/%s: %w", namespace, name, err)
	}
	sort.Slice(sandboxes, func(i, j int) bool { return sandboxes[i].CreatedAt > sandboxes[j].CreatedAt })

	status := &cri.PodStatus{ID: uid, Name: name, Namespace: namespace}
	for i, s := range sandboxes {
		resp, err := m.rt.PodSandboxStatus(ctx, s.Id, false)
		if err != nil {
			if cri.IsNotFound(err) {
				continue // removed since the list
			}
			return nil, fmt.Errorf("status of sandbox %q of pod %s/%s: %w", s.Id, namespace, name, err)
		}
		ss := resp.GetStatus()
		status.SandboxStatuses = append(status.SandboxStatuses, ss)
		if i == 0 && ss.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			status.IPs = sandboxIPs(ss)
		}
	}

	containers, err := m.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{LabelPodUID: string(uid)},
	})
	if err != nil {
		return nil, fmt.Errorf("list containers of pod %s/%s: %w", namespace, name, err)
	}
	for _, c := range containers {
		resp, err := m.rt.ContainerStatus(ctx, c.Id, false)
		if err != nil {
			if cri.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("status of container %q of pod %s/%s: %w", c.Id, namespace, name, err)
		}
		status.ContainerStatuses = append(status.ContainerStatuses, m.containerStatus(resp.GetStatus()))
	}
	sortContainerStatuses(status.ContainerStatuses)
	status.TimeStamp = m.opts.Clock.Now()
	return status, nil
}

// PodStatusFromEvent is the status of a pod as a runtime's container
// event carries it (the kubelet's evented PLEG GeneratePodStatus): the
// event's sandbox and every container of that sandbox, read by the
// runtime when it sent the event, with no call to the runtime. It is
// false for an event that is no such snapshot: without a sandbox status
// naming its sandbox and pod, or without the time the runtime made it
// (an event a client assembled, which may carry one container only, as
// the containerd 1.6 adapter's do). The status holds the event's sandbox
// only: a caller that knows of other sandboxes or containers of the pod
// reads the pod instead.
func (m *Manager) PodStatusFromEvent(ev *runtimeapi.ContainerEventResponse) (*cri.PodStatus, bool) {
	ss := ev.GetPodSandboxStatus()
	meta := ss.GetMetadata()
	if ev.GetCreatedAt() == 0 || ss.GetId() == "" || meta.GetUid() == "" {
		return nil, false
	}
	status := &cri.PodStatus{ID: types.UID(meta.GetUid()), Name: meta.GetName(), Namespace: meta.GetNamespace(),
		SandboxStatuses: []*runtimeapi.PodSandboxStatus{ss}}
	if ss.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
		status.IPs = sandboxIPs(ss)
	}
	for _, c := range ev.GetContainersStatuses() {
		if c.GetId() == "" {
			return nil, false
		}
		status.ContainerStatuses = append(status.ContainerStatuses, m.containerStatus(c))
	}
	sortContainerStatuses(status.ContainerStatuses)
	status.TimeStamp = m.opts.Clock.Now()
	return status, true
}

// containerStatus converts a runtime's container status, with the
// termination message of an exited container.
func (m *Manager) containerStatus(s *runtimeapi.ContainerStatus) *cri.ContainerStatus {
	cs := toContainerStatus(s)
	if cs.State == cri.ContainerStateExited {
		if msg := m.terminationMessage(s); msg != "" {
			if cs.Message != "" {
				cs.Message += ": "
			}
			cs.Message += msg
		}
	}
	return cs
}

// sortContainerStatuses orders statuses newest first.
func sortContainerStatuses(l []*cri.ContainerStatus) {
	sort.SliceStable(l, func(i, j int) bool { return l[i].CreatedAt.After(l[j].CreatedAt) })
}

func sandboxIPs(ss *runtimeapi.PodSandboxStatus) []string {
	n := ss.GetNetwork()
	if n == nil || n.Ip == "" {
		return nil
	}
	ips := []string{n.Ip}
	for _, ip := range n.AdditionalIps {
		if ip.GetIp() != "" {
			ips = append(ips, ip.GetIp())
		}
	}
	return ips
}

func unixNanoTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

func toContainerStatus(s *runtimeapi.ContainerStatus) *cri.ContainerStatus {
	info := parseContainerInfo(s.GetLabels(), s.GetAnnotations())
	name := info.name
	if name == "" {
		name = s.GetMetadata().GetName()
	}
	return &cri.ContainerStatus{
		ID:           s.GetId(),
		Name:         name,
		State:        cri.ContainerStateOf(s.GetState()),
		CreatedAt:    unixNanoTime(s.GetCreatedAt()),
		StartedAt:    unixNanoTime(s.GetStartedAt()),
		FinishedAt:   unixNanoTime(s.GetFinishedAt()),
		ExitCode:     int(s.GetExitCode()),
		Image:        s.GetImage().GetImage(),
		ImageID:      s.GetImageRef(),
		Hash:         info.hash,
		RestartCount: info.restartCount,
		Reason:       s.GetReason(),
		Message:      cutMessage(s.GetMessage()),
	}
}

// MaxContainerMessageBytes bounds a container's message kept from the
// runtime (a termination message), as the kubelet's
// kubecontainer.MaxContainerTerminationMessageLength does: the PLEG cache
// holds every container's status, so a runtime's megabytes of message must
// not be kept.
const MaxContainerMessageBytes = 4096

// cutMessage keeps the end of a message over MaxContainerMessageBytes (the
// kubelet keeps a termination message's tail), copied so the runtime's
// response is not pinned.
func cutMessage(m string) string {
	if len(m) <= MaxContainerMessageBytes {
		return m
	}
	return strings.Clone(m[len(m)-MaxContainerMessageBytes:])
}

// GetPods lists the runtime's pods, grouped by the pod UID label: only this
// node's (LabelNode) when Options.NodeName is set. With all false only ready
// sandboxes and running containers are listed.
func (m *Manager) GetPods(ctx context.Context, all bool) ([]*cri.Pod, error) {
	sf := &runtimeapi.PodSandboxFilter{}
	cf := &runtimeapi.ContainerFilter{}
	if !all {
		sf.State = &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}
		cf.State = &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}
	}
	if m.opts.NodeName != "" {
		sf.LabelSelector = map[string]string{LabelNode: m.opts.NodeName}
		cf.LabelSelector = map[string]string{LabelNode: m.opts.NodeName}
	}
	sandboxes, err := m.rt.ListPodSandbox(ctx, sf)
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	containers, err := m.rt.ListContainers(ctx, cf)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}

	pods := map[types.UID]*cri.Pod{}
	podFor := func(labels map[string]string, createdAt int64) *cri.Pod {
		uid := types.UID(labels[LabelPodUID])
		p, ok := pods[uid]
		if !ok {
			p = &cri.Pod{ID: uid, Name: labels[LabelPodName], Namespace: labels[LabelPodNamespace], CreatedAt: createdAt}
			pods[uid] = p
		}
		if createdAt != 0 && (p.CreatedAt == 0 || createdAt < p.CreatedAt) {
			p.CreatedAt = createdAt
		}
		return p
	}
	for _, s := range sandboxes {
		if s.Labels[LabelPodUID] == "" {
			continue // not ours
		}
		p := podFor(s.Labels, s.CreatedAt)
		state := cri.ContainerStateExited
		if s.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			state = cri.ContainerStateRunning
		}
		p.Sandboxes = append(p.Sandboxes, &cri.Container{
			ID: s.Id, Name: s.GetMetadata().GetName(), State: state, CreatedAt: s.CreatedAt,
		})
	}
	for _, c := range containers {
		if c.Labels[LabelPodUID] == "" {
			continue
		}
		p := podFor(c.Labels, c.CreatedAt)
		info := parseContainerInfo(c.Labels, c.Annotations)
		name := info.name
		if name == "" {
			name = c.GetMetadata().GetName()
		}
		p.Containers = append(p.Containers, &cri.Container{
			ID: c.Id, Name: name, Image: c.GetImage().GetImage(), ImageID: c.ImageRef,
			Hash: info.hash, State: cri.ContainerStateOf(c.State), CreatedAt: c.CreatedAt,
		})
	}
	out := make([]*cri.Pod, 0, len(pods))
	for _, p := range pods {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt < out[j].CreatedAt })
	return out, nil
}
