package kuberuntime

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages/seconds"

	"github.com/actorlet/actorlet/messages/podrules"
)

// podGracePeriod is the pod's termination grace: the override if set, else
// the deletion grace, else the spec's, else 30 s. An unknown pod gets 1 s.
func podGracePeriod(pod *v1.Pod, override *int64) int64 {
	switch {
	case override != nil:
		return *override
	case pod == nil:
		return orphanGracePeriod
	case pod.DeletionGracePeriodSeconds != nil:
		return *pod.DeletionGracePeriodSeconds
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return podrules.DefaultGracePeriodSeconds
}

// KillContainer stops one container: its preStop hook within the grace
// period, then StopContainer with the remaining grace. pod may be nil (the
// hook is then restored from the container's annotations).
func (m *Manager) KillContainer(ctx context.Context, pod *v1.Pod, containerID, containerName, reason string, gracePeriodOverride *int64) error {
	var uid types.UID
	if pod != nil {
		uid = pod.UID
	}
	return m.killContainer(ctx, pod, uid, containerID, containerName, reason, gracePeriodOverride)
}

func (m *Manager) killContainer(ctx context.Context, pod *v1.Pod, uid types.UID, id, name, message string, override *int64) error {
	return m.killContainerInOrder(ctx, pod, uid, id, name, message, override, nil)
}

// killContainerInOrder is killContainer whose stop signal waits for its
// turn in order (nil: no wait).
func (m *Manager) killContainerInOrder(ctx context.Context, pod *v1.Pod, uid types.UID, id, name, message string, override *int64, order *terminationOrdering) error {
	spec := findContainerSpec(pod, name)
	var preStop *v1.LifecycleHandler
	if spec != nil && spec.Lifecycle != nil {
		preStop = spec.Lifecycle.PreStop
	}
	if spec == nil {
		// Not in the spec (an orphan, or removed from the pod): the hook
		// and ports were recorded on the container when it was created.
		if st, err := m.rt.ContainerStatus(ctx, id, false); err == nil {
			info := parseContainerInfo(st.GetStatus().GetLabels(), st.GetStatus().GetAnnotations())
			preStop = info.preStop
			spec = &v1.Container{Name: name, Ports: info.ports}
			if uid == "" {
				uid = info.podUID
			}
		} else {
			spec = &v1.Container{Name: name}
		}
	}

	grace := podGracePeriod(pod, override)
	if message == "" {
		message = fmt.Sprintf("Stopping container %s", name)
	}
	m.event(pod, v1.EventTypeNormal, "Killing", "%s", message)
	klog.V(3).InfoS("Killing container with a grace period", "pod", klog.KRef(podNamespace(pod), podNameOnly(pod)), "podUID", uid, "containerName", name, "containerID", id, "gracePeriod", grace)

	if preStop != nil && grace > 0 {
		grace -= m.runPreStop(ctx, pod, uid, id, spec, preStop, grace)
	}
	if order != nil && grace > 0 {
		grace -= order.waitForTurn(ctx, m, name, grace)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("kill container %q (%s): %w", name, id, ctx.Err())
	}
	if override == nil && grace < minimumGracePeriod {
		grace = minimumGracePeriod
	}
	grace = seconds.Clamp(grace)
	if err := m.rt.StopContainer(ctx, id, grace); err != nil && !cri.IsNotFound(err) && !m.exited(ctx, id) {
		return wrapKind(ErrKillContainer, err, "stop container %q (%s)", name, id)
	}
	return nil
}

// exited reports whether the container has exited: a StopContainer that
// failed while the container ended anyway (containerd 1.6 answers "ttrpc:
// closed" when the task's shim goes away during the kill, at about one in
// a hundred when 100 pods are deleted at once) did its work, and failing
// the kill would hold the pod's teardown for the error back-off (10 s).
func (m *Manager) exited(ctx context.Context, id string) bool {
	st, err := m.rt.ContainerStatus(ctx, id, false)
	if err != nil {
		return cri.IsNotFound(err)
	}
	return st.GetStatus().GetState() == runtimeapi.ContainerState_CONTAINER_EXITED
}

// runPreStop runs the preStop hook for at most grace seconds and returns
// the whole seconds it used.
func (m *Manager) runPreStop(ctx context.Context, pod *v1.Pod, uid types.UID, id string, c *v1.Container, h *v1.LifecycleHandler, grace int64) int64 {
	start := m.opts.Clock.Now()
	hookCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	timer := m.opts.Clock.NewTimer(seconds.Duration(grace))
	defer timer.Stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if msg, err := m.runHook(hookCtx, pod, uid, id, c, h); err != nil && hookCtx.Err() == nil {
			m.event(pod, v1.EventTypeWarning, "FailedPreStopHook", "%s", msg)
			klog.V(2).InfoS("PreStop hook failed", "podUID", uid, "containerName", c.Name, "err", m.redactErr(pod, err))
		}
	}()
	select {
	case <-done:
	case <-timer.C():
		cancel()
		<-done
		klog.V(2).InfoS("PreStop hook did not finish within the grace period", "podUID", uid, "containerName", c.Name, "gracePeriod", grace)
	case <-ctx.Done():
		<-done
	}
	return int64(m.opts.Clock.Since(start).Seconds())
}

func podNamespace(pod *v1.Pod) string {
	if pod == nil {
		return ""
	}
	return pod.Namespace
}

func podNameOnly(pod *v1.Pod) string {
	if pod == nil {
		return ""
	}
	return pod.Name
}

// KillPod stops every running container of the pod in parallel (preStop,
// then StopContainer; sidecars stop after the regular containers, in
// reverse order), then its sandboxes. pod may be nil for an orphan:
// the grace period is then 1 s unless overridden.
func (m *Manager) KillPod(ctx context.Context, pod *v1.Pod, running *cri.Pod, gracePeriodOverride *int64) error {
	var result SyncResult
	m.killPodWithResult(ctx, pod, running, gracePeriodOverride, &result)
	return result.Error()
}

func (m *Manager) killPodWithResult(ctx context.Context, pod *v1.Pod, running *cri.Pod, override *int64, result *SyncResult) {
	if running == nil {
		return
	}
	uid := running.ID
	if pod != nil {
		uid = pod.UID
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var live []*cri.Container
	for _, c := range running.Containers {
		if c.State != cri.ContainerStateExited {
			live = append(live, c)
		}
	}
	// With sidecars: regular containers stop first, then the sidecars in
	// reverse order.
	order := newTerminationOrdering(pod, live)
	for _, c := range live {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer order.stopped(c.Name)
			err := m.killContainerInOrder(ctx, pod, uid, c.ID, c.Name, "", override, order)
			mu.Lock()
			result.add(ActionKillContainer, c.Name, err)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		result.add(ActionKillPodSandbox, string(uid), fmt.Errorf("kill pod: %w", err))
		return
	}
	for _, s := range running.Sandboxes {
		err := m.rt.StopPodSandbox(ctx, s.ID)
		if err != nil && !cri.IsNotFound(err) {
			result.add(ActionKillPodSandbox, s.ID, wrapKind(ErrKillPodSandbox, err, "stop sandbox %q", s.ID))
			continue
		}
		result.add(ActionKillPodSandbox, s.ID, nil)
	}
}

// runningPod is the part of status the kill path needs: containers not yet
// exited, and every sandbox.
func runningPod(pod *v1.Pod, status *cri.PodStatus) *cri.Pod {
	p := &cri.Pod{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
	if status == nil {
		return p
	}
	for _, cs := range status.ContainerStatuses {
		if cs.State == cri.ContainerStateExited {
			continue
		}
		p.Containers = append(p.Containers, &cri.Container{ID: cs.ID, Name: cs.Name, State: cs.State, Hash: cs.Hash})
	}
	for _, s := range status.SandboxStatuses {
		p.Sandboxes = append(p.Sandboxes, &cri.Container{ID: s.GetId(), Name: s.GetMetadata().GetName()})
	}
	return p
}

// RestartContainer stops one container at an operator's request and clears
// its crash back-off, so the next sync starts a fresh instance at once: an
// operator's restart is not a crash. The new instance counts as a restart.
func (m *Manager) RestartContainer(ctx context.Context, pod *v1.Pod, containerID, containerName string) error {
	if err := m.KillContainer(ctx, pod, containerID, containerName, "Restart requested", nil); err != nil {
		return err
	}
	if c := findContainerSpec(pod, containerName); c != nil {
		m.restartBackOff.reset(backOffKey{uid: pod.UID, name: containerName, hash: hashContainer(c)})
	}
	return nil
}
