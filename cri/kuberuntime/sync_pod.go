package kuberuntime

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages/podrules"
	"github.com/actorlet/actorlet/messages/wire"
)

// SyncPod runs one computePodActions + execute pass for pod against its
// runtime status. probes holds, by container ID, liveness or startup
// failures (those containers are killed and restarted per the restart
// policy) and startup successes (a sidecar with a startup probe lets the
// next container start once it succeeded).
func (m *Manager) SyncPod(ctx context.Context, pod *v1.Pod, status *cri.PodStatus, probes cri.Probes) SyncResult {
	var result SyncResult
	if err := validatePodIdentity(pod); err != nil {
		result.add(ActionCreatePodSandbox, "", wrapKind(ErrConfigPodSandbox, err, ""))
		return result
	}
	m.claimPodDir(pod.UID)
	if status == nil {
		status = &cri.PodStatus{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
	}
	m.runtimeNameFor(ctx)
	m.refreshVolumes(pod)

	actions := computePodActions(pod, status, probes)
	klog.V(3).InfoS("Computed pod actions", "pod", klog.KObj(pod), "podUID", pod.UID, "actions", actions.String())

	if actions.CreateSandbox && len(status.SandboxStatuses) > 0 {
		m.event(pod, v1.EventTypeNormal, "SandboxChanged", "Pod sandbox changed, it will be killed and re-created.")
	}

	if actions.KillPod {
		m.killPodWithResult(ctx, pod, runningPod(pod, status), nil, &result)
		result.PodKilled = true
		if result.Error() != nil || !actions.CreateSandbox {
			return result
		}
		// Starting over: init containers run again from the first one.
		status = &cri.PodStatus{
			ID: status.ID, Name: status.Name, Namespace: status.Namespace, IPs: status.IPs,
			SandboxStatuses:   status.SandboxStatuses,
			ContainerStatuses: m.removeInitContainers(ctx, pod, status),
			TimeStamp:         status.TimeStamp,
		}
	}
	stopped := map[string]bool{}
	if !actions.KillPod {
		for id, k := range actions.ContainersToKill {
			err := m.killContainer(ctx, pod, pod.UID, id, k.name, k.message, k.grace)
			result.add(ActionKillContainer, k.name, err)
			if err != nil {
				klog.ErrorS(err, "Failed to kill container for a restart", "pod", klog.KObj(pod), "container", k.name, "containerID", id)
				return result
			}
			stopped[k.name] = true
		}
	}
	if ctx.Err() != nil {
		return result
	}

	target := startTarget{sandboxID: actions.SandboxID, podIPs: status.IPs, stoppedNow: stopped}
	sandboxCfg, err := m.sandboxConfig(pod, actions.Attempt)
	if err != nil {
		result.add(ActionCreatePodSandbox, string(pod.UID), wrapKind(ErrConfigPodSandbox, err, ""))
		return result
	}
	// The pod's cgroup exists, with its limits, before its sandbox (the
	// kubelet's pod container manager, at every sync of a live pod).
	if pc := m.opts.PodCgroups; pc != nil {
		parent, err := pc.EnsurePod(pod)
		if err != nil {
			result.add(ActionCreatePodSandbox, string(pod.UID), wrapKind(ErrConfigPodSandbox, fmt.Errorf("pod cgroup: %w", err), ""))
			return result
		}
		sandboxCfg.Linux.CgroupParent = parent
	}
	target.sandboxCfg = sandboxCfg
	if actions.CreateSandbox {
		// Volumes a sandbox's namespaces must see from their start.
		if err := m.setupMemoryVolumes(pod); err != nil {
			result.add(ActionCreatePodSandbox, string(pod.UID), wrapKind(ErrConfigPodSandbox, err, ""))
			return result
		}
		id, ips, err := m.createSandbox(ctx, pod, sandboxCfg)
		result.add(ActionCreatePodSandbox, string(pod.UID), err)
		if err != nil {
			return result
		}
		result.SandboxCreated = true
		target.sandboxID, target.podIPs = id, ips
		// The fresh sandbox has no containers yet.
		status = &cri.PodStatus{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace, ContainerStatuses: status.ContainerStatuses}
	}
	if pod.Spec.HostNetwork && m.opts.HostIP != "" {
		target.podIPs = []string{m.opts.HostIP}
	}

	for _, i := range actions.InitContainersToStart {
		c := &pod.Spec.InitContainers[i]
		err := m.startContainer(ctx, pod, c, status, target)
		result.add(ActionInitContainer, c.Name, err)
		if ctx.Err() != nil || (err != nil && !podrules.IsSidecar(c)) {
			// A sidecar that failed to start does not hold back the
			// others; a regular init container does.
			return result
		}
	}
	for _, i := range actions.EphemeralContainersToStart {
		c := ephemeralContainer(&pod.Spec.EphemeralContainers[i])
		if m.opts.DenyEphemeralContainers {
			result.add(ActionStartContainer, c.Name, m.refuseEphemeralByPolicy(pod, c))
			continue
		}
		if m.refuseEphemeral(ctx, pod, c, i) {
			continue
		}
		err := m.startContainer(ctx, pod, c, status, target)
		result.add(ActionStartContainer, c.Name, err)
		if ctx.Err() != nil {
			return result
		}
	}
	for _, i := range actions.ContainersToStart {
		c := &pod.Spec.Containers[i]
		err := m.startContainer(ctx, pod, c, status, target)
		result.add(ActionStartContainer, c.Name, err)
		if ctx.Err() != nil {
			return result
		}
	}
	return result
}

// createSandbox runs a new sandbox and returns its ID and IPs.
func (m *Manager) createSandbox(ctx context.Context, pod *v1.Pod, cfg *runtimeapi.PodSandboxConfig) (string, []string, error) {
	if err := m.ensurePodLogsDir(pod); err != nil {
		m.event(pod, v1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
		return "", nil, wrapKind(ErrCreatePodSandbox, err, "")
	}
	id, err := m.rt.RunPodSandbox(ctx, cfg, m.opts.RuntimeHandler)
	if err != nil {
		m.event(pod, v1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
		return "", nil, wrapKind(ErrCreatePodSandbox, err, "run sandbox of pod %s/%s", pod.Namespace, pod.Name)
	}
	st, err := m.rt.PodSandboxStatus(ctx, id, false)
	if err != nil {
		m.event(pod, v1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to get pod sandbox status: %v", err)
		return "", nil, wrapKind(ErrCreatePodSandbox, err, "status of new sandbox %q", id)
	}
	var ips []string
	if !pod.Spec.HostNetwork {
		ips = sandboxIPs(st.GetStatus())
	}
	klog.V(3).InfoS("Created pod sandbox", "pod", klog.KObj(pod), "podSandboxID", id, "attempt", cfg.Metadata.Attempt)
	return id, ips, nil
}

// removeInitContainers deletes all init container instances so a new
// sandbox starts initialization from scratch, and returns the statuses left.
func (m *Manager) removeInitContainers(ctx context.Context, pod *v1.Pod, status *cri.PodStatus) []*cri.ContainerStatus {
	inits := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		inits[c.Name] = true
	}
	kept := status.ContainerStatuses[:0:0]
	for _, cs := range status.ContainerStatuses {
		if !inits[cs.Name] {
			kept = append(kept, cs)
			continue
		}
		if err := m.rt.RemoveContainer(ctx, cs.ID); err != nil && !cri.IsNotFound(err) {
			klog.ErrorS(err, "Failed to remove init container", "pod", klog.KObj(pod), "container", cs.Name, "containerID", cs.ID)
			kept = append(kept, cs)
		}
	}
	return kept
}

// refuseEphemeralByPolicy keeps the debug container c from starting on a node that
// refuses exec: its status waits with reason Forbidden and the message exec
// gets (403), and one Warning event says so (not one per sync).
func (m *Manager) refuseEphemeralByPolicy(pod *v1.Pod, c *v1.Container) error {
	msg := wire.ForbiddenMessage("debug (ephemeral container "+c.Name+")", "--allow-exec=false")
	if e, ok := m.reasons.get(pod.UID, c.Name); !ok || e.reason != ErrForbidden.Error() {
		m.event(pod, v1.EventTypeWarning, "Failed", "Error: %s", msg)
		klog.InfoS("Refused a debug container: exec is disabled on this node", "pod", klog.KObj(pod), "container", c.Name)
	}
	m.reasons.set(pod.UID, c.Name, ErrForbidden.Error(), msg)
	return newKindError(ErrForbidden, "%s", msg)
}
