package kuberuntime

import (
	"context"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/cri"
)

// startTarget is what startContainer needs to know about the sandbox.
type startTarget struct {
	sandboxID  string
	sandboxCfg *runtimeapi.PodSandboxConfig
	podIPs     []string
	// stoppedNow names the containers this pass stopped to replace.
	stoppedNow map[string]bool
}

// startContainer starts a new instance of c unless it is in restart
// back-off: image, create, start, postStart. The outcome is recorded in the
// reason cache; failures are kind errors.
func (m *Manager) startContainer(ctx context.Context, pod *v1.Pod, c *v1.Container, status *cri.PodStatus, t startTarget) error {
	err := m.doStartContainer(ctx, pod, c, status, t)
	if err != nil {
		// The reason cache feeds the status; the error the sync result
		// and the pod worker's log line.
		err = m.redactErr(pod, err)
		reason, msg := reasonOf(err)
		m.reasons.set(pod.UID, c.Name, reason, msg)
		return err
	}
	m.reasons.remove(pod.UID, c.Name)
	return nil
}

func (m *Manager) doStartContainer(ctx context.Context, pod *v1.Pod, c *v1.Container, status *cri.PodStatus, t startTarget) error {
	prev := status.FindContainerStatusByName(c.Name)
	// A previous instance this pass stopped to replace (a failed liveness or
	// startup probe, a changed spec) is not a crash: as in the kubelet, whose
	// back-off check sees it still running in the status the pass acted on,
	// the new instance starts at once.
	replaced := t.stoppedNow[c.Name]
	if prev != nil && !replaced && prev.State != cri.ContainerStateExited {
		// The status may be stale (an exit not yet seen by PLEG): ask the
		// runtime what the previous instance is now, so a container that
		// just died is not restarted past its back-off.
		if now, err := m.rt.ContainerStatus(ctx, prev.ID, false); err == nil && now.GetStatus() != nil {
			prev = toContainerStatus(now.GetStatus())
		}
		if prev.State == cri.ContainerStateRunning {
			return nil // already running: the sync acted on a stale status
		}
	}
	if prev != nil && !replaced && prev.State == cri.ContainerStateExited {
		if err := m.checkRestartBackOff(pod, c, prev); err != nil {
			return err
		}
	}

	if id := m.createdInstance(ctx, prev, c, t.sandboxID); id != "" {
		klog.InfoS("Starting the container instance created but never started (the agent stopped in between)",
			"pod", klog.KObj(pod), "container", c.Name, "containerID", id)
		return m.runContainer(ctx, pod, c, id, prev.RestartCount)
	}

	imageRef, err := m.ensureImage(ctx, pod, c, t.sandboxCfg)
	if err != nil {
		return err
	}
	if m.opts.ImageUsed != nil {
		m.opts.ImageUsed(imageRef)
	}

	restartCount := 0
	if prev != nil {
		restartCount = prev.RestartCount + 1
	}
	if err := m.ensureContainerLogDir(pod, c.Name); err != nil {
		m.event(pod, v1.EventTypeWarning, "Failed", "Error: %v", err)
		return wrapKind(ErrCreateContainerConfig, err, "")
	}
	cfg, err := m.containerConfig(pod, c, restartCount, t.podIPs, imageRef)
	if err != nil {
		m.event(pod, v1.EventTypeWarning, "Failed", "Error: %v", err)
		return wrapKind(ErrCreateContainerConfig, err, "")
	}
	id, err := m.rt.CreateContainer(ctx, t.sandboxID, cfg, t.sandboxCfg)
	if err != nil {
		m.event(pod, v1.EventTypeWarning, "Failed", "Error: %v", err)
		return wrapKind(ErrCreateContainer, err, "create container %q", c.Name)
	}
	m.event(pod, v1.EventTypeNormal, "Created", "Created container %s", c.Name)
	return m.runContainer(ctx, pod, c, id, restartCount)
}

// createdInstance returns the ID of prev when it is an instance of c, with
// c's current spec, in the target sandbox, that was created but never
// started: an agent that died between CreateContainer and StartContainer
// (or whose CreateContainer completed after it died) left it. Starting it
// keeps the pod at one container instead of leaving a dead one beside a new
// one.
//
// The kubelet instead creates a new instance beside a CREATED one (and
// garbage-collects the old). Both are exactly once only if the runtime's
// CREATED is the truth: no process ran and none will. containerd keeps
// that (a start in flight is refused); the process runtime does since its
// starts are recorded before the fork (cri/procruntime/start.go: a start
// interrupted by a crash comes back RUNNING, EXITED, or CREATED only when
// no process ever ran). Starting the same instance has one more guard the
// kubelet's rule lacks: a start still in flight in the runtime makes this
// StartContainer fail instead of racing a second instance.
func (m *Manager) createdInstance(ctx context.Context, prev *cri.ContainerStatus, c *v1.Container, sandboxID string) string {
	if prev == nil || prev.State != cri.ContainerStateCreated || prev.Hash != hashContainer(c) || sandboxID == "" {
		return ""
	}
	cs, err := m.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{Id: prev.ID, PodSandboxId: sandboxID})
	if err != nil || len(cs) != 1 || cs[0].State != runtimeapi.ContainerState_CONTAINER_CREATED {
		return ""
	}
	return prev.ID
}

// runContainer starts the created container id and runs c's postStart hook.
func (m *Manager) runContainer(ctx context.Context, pod *v1.Pod, c *v1.Container, id string, restartCount int) error {
	if err := m.rt.StartContainer(ctx, id); err != nil {
		m.event(pod, v1.EventTypeWarning, "Failed", "Error: %v", err)
		return wrapKind(ErrRunContainer, err, "start container %q (%s)", c.Name, id)
	}
	m.event(pod, v1.EventTypeNormal, "Started", "Started container %s", c.Name)
	klog.V(3).InfoS("Started container", "pod", klog.KObj(pod), "container", c.Name, "containerID", id, "restartCount", restartCount)

	if c.Lifecycle != nil && c.Lifecycle.PostStart != nil {
		msg, err := m.runHook(ctx, pod, pod.UID, id, c, c.Lifecycle.PostStart)
		if err != nil {
			m.event(pod, v1.EventTypeWarning, "FailedPostStartHook", "%s", msg)
			if kerr := m.killContainer(ctx, pod, pod.UID, id, c.Name, "FailedPostStartHook", nil); kerr != nil {
				klog.ErrorS(kerr, "Failed to kill container after its postStart hook failed", "pod", klog.KObj(pod), "container", c.Name, "containerID", id)
			}
			return newKindError(ErrPostStartHook, "%s", msg)
		}
	}
	return nil
}

// checkRestartBackOff returns ErrCrashLoopBackOff while the container's
// last instance finished less than its back-off ago; otherwise it steps the
// back-off for the restart about to happen.
func (m *Manager) checkRestartBackOff(pod *v1.Pod, c *v1.Container, prev *cri.ContainerStatus) error {
	key := backOffKey{uid: pod.UID, name: c.Name, hash: hashContainer(c)}
	if in, d := m.restartBackOff.inBackOffSince(key, prev.FinishedAt); in {
		m.event(pod, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", c.Name, podName(pod, pod.UID))
		return newBackOffError(ErrCrashLoopBackOff, prev.FinishedAt.Add(d), "back-off %s restarting failed container=%s pod=%s", d, c.Name, podName(pod, pod.UID))
	}
	m.restartBackOff.next(key, prev.FinishedAt)
	return nil
}

// findContainerSpec looks name up among the pod's init and regular containers.
func findContainerSpec(pod *v1.Pod, name string) *v1.Container {
	if pod == nil {
		return nil
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return ephemeralContainer(&pod.Spec.EphemeralContainers[i])
		}
	}
	return nil
}

// ephemeralContainer is an ephemeral (debug) container as a container to
// run: the same fields, no probes, ports, lifecycle or resources (the API
// forbids them).
func ephemeralContainer(e *v1.EphemeralContainer) *v1.Container {
	c := v1.Container(e.EphemeralContainerCommon)
	return &c
}
