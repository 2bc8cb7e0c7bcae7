package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/cri"
)

// RemoveDeadContainers removes the pod's exited container instances beyond
// the newest KeepDeadContainers per container name (the newest instance of a
// name is never removed, so restart counts and last states survive), and
// its not-ready sandboxes other than the newest that no container uses.
func (m *Manager) RemoveDeadContainers(ctx context.Context, uid types.UID) error {
	sel := map[string]string{LabelPodUID: string(uid)}
	containers, err := m.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		return fmt.Errorf("list containers of pod %s: %w", uid, err)
	}
	sort.Slice(containers, func(i, j int) bool { return containers[i].CreatedAt > containers[j].CreatedAt })
	byName := map[string][]*runtimeapi.Container{}
	usedSandboxes := map[string]bool{}
	for _, c := range containers {
		name := c.Labels[LabelContainerName]
		byName[name] = append(byName[name], c)
	}
	var errs []error
	for name, instances := range byName {
		dead := 0
		for i, c := range instances {
			// The newest instance stays whatever its state.
			if i == 0 || c.State != runtimeapi.ContainerState_CONTAINER_EXITED {
				usedSandboxes[c.PodSandboxId] = true
				continue
			}
			dead++
			if dead <= m.opts.KeepDeadContainers {
				usedSandboxes[c.PodSandboxId] = true
				continue
			}
			if err := m.rt.RemoveContainer(ctx, c.Id); err != nil && !cri.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("remove dead container %q (%s): %w", name, c.Id, err))
				usedSandboxes[c.PodSandboxId] = true
				continue
			}
			klog.V(4).InfoS("Removed dead container", "podUID", uid, "containerName", name, "containerID", c.Id)
		}
	}

	sandboxes, err := m.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("list sandboxes of pod %s: %w", uid, err))...)
	}
	sort.Slice(sandboxes, func(i, j int) bool { return sandboxes[i].CreatedAt > sandboxes[j].CreatedAt })
	for i, s := range sandboxes {
		if i == 0 || s.State == runtimeapi.PodSandboxState_SANDBOX_READY || usedSandboxes[s.Id] {
			continue
		}
		if err := m.rt.RemovePodSandbox(ctx, s.Id); err != nil && !cri.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove dead sandbox %q: %w", s.Id, err))
		}
	}
	return errors.Join(errs...)
}

// CleanupPod removes every container and sandbox of a terminated pod, its
// emptyDir volumes and logs, and forgets its back-offs and failure reasons.
// Containers still running are stopped at once (the pod is terminated: its
// grace period was spent by KillPod).
//
// A sandbox takes its containers with it: CRI's RemovePodSandbox forcibly
// stops and removes them (containerd, the process runtime), and
// StopPodSandbox stops them, so only a sandbox still ready is stopped first
// and only containers outside the listed sandboxes are stopped and removed
// one by one. Teardown of many pods is bound by these calls under the
// runtime-call limit: half as many as one call per object.
func (m *Manager) CleanupPod(ctx context.Context, uid types.UID) error {
	sel := map[string]string{LabelPodUID: string(uid)}
	sandboxes, err := m.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		return fmt.Errorf("list sandboxes of pod %s: %w", uid, err)
	}
	containers, err := m.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		return fmt.Errorf("list containers of pod %s: %w", uid, err)
	}
	listed := map[string]bool{}
	for _, s := range sandboxes {
		listed[s.Id] = true
	}
	var errs []error
	var logDir string
	for _, c := range containers {
		if listed[c.PodSandboxId] {
			continue // removed with its sandbox
		}
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			if err := m.rt.StopContainer(ctx, c.Id, 0); err != nil && !cri.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("stop container %q: %w", c.Id, err))
				continue
			}
		}
		if err := m.rt.RemoveContainer(ctx, c.Id); err != nil && !cri.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove container %q: %w", c.Id, err))
		}
	}
	for _, s := range sandboxes {
		if ns, name := s.Labels[LabelPodNamespace], s.Labels[LabelPodName]; m.opts.PodLogsDir != "" && ns != "" && name != "" {
			logDir = filepath.Join(m.opts.PodLogsDir, fmt.Sprintf("%s_%s_%s", ns, name, uid))
		}
		stopped := s.State == runtimeapi.PodSandboxState_SANDBOX_NOTREADY && !runningIn(containers, s.Id)
		if err := m.removeSandbox(ctx, s.Id, stopped); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	// Its containers gone, the pod's cgroup goes.
	if pc := m.opts.PodCgroups; pc != nil && uid != "" {
		if err := pc.RemovePod(uid); err != nil {
			errs = append(errs, fmt.Errorf("pod %s: %w", uid, err))
		}
	}
	if m.opts.PodsDir != "" && uid != "" {
		dir := filepath.Join(m.opts.PodsDir, string(uid), "volumes", "emptydir")
		if err := unmountMemoryVolumes(dir); err != nil {
			errs = append(errs, fmt.Errorf("pod %s: %w", uid, err))
		} else if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove emptyDir volumes of pod %s: %w", uid, err))
		}
	}
	if logDir != "" {
		if err := os.RemoveAll(logDir); err != nil {
			errs = append(errs, fmt.Errorf("remove logs of pod %s: %w", uid, err))
		}
	}
	m.forgetPod(uid)
	return errors.Join(errs...)
}

// removeSandbox removes a sandbox, stopping it first unless it is known to
// be stopped; a removal refused all the same (a runtime that wants its own
// stop, e.g. to release the network namespace) is retried after one.
func (m *Manager) removeSandbox(ctx context.Context, id string, stopped bool) error {
	if stopped {
		err := m.rt.RemovePodSandbox(ctx, id)
		if err == nil || cri.IsNotFound(err) {
			return nil
		}
		klog.V(4).InfoS("Removing a stopped sandbox failed, stopping it again first", "podSandboxID", id, "err", err)
	}
	if err := m.rt.StopPodSandbox(ctx, id); err != nil && !cri.IsNotFound(err) {
		return fmt.Errorf("stop sandbox %q: %w", id, err)
	}
	if err := m.rt.RemovePodSandbox(ctx, id); err != nil && !cri.IsNotFound(err) {
		return fmt.Errorf("remove sandbox %q: %w", id, err)
	}
	return nil
}

// runningIn reports whether a container of the list runs in the sandbox.
func runningIn(containers []*runtimeapi.Container, sandboxID string) bool {
	for _, c := range containers {
		if c.PodSandboxId == sandboxID && c.State != runtimeapi.ContainerState_CONTAINER_EXITED {
			return true
		}
	}
	return false
}

// Reclaimed is what ReclaimTerminatedPods removed.
type Reclaimed struct {
	// Pods are the terminated pods whose content went, Containers and
	// Sandboxes their dead containers and sandboxes.
	Pods, Containers, Sandboxes int
}

// ReclaimTerminatedPods removes what the runtime and the agent keep of
// pods whose work is over though they are still desired (a completed or
// evicted pod): their dead containers and sandboxes, emptyDir volumes and
// logs, as the kubelet's container GC does for terminated pods when the
// eviction manager reclaims disk (DeleteAllUnusedContainers). A pod the
// runtime still runs anything of (a ready sandbox, a container not
// exited) is left alone: the caller's view of it was stale.
func (m *Manager) ReclaimTerminatedPods(ctx context.Context, uids []types.UID) (Reclaimed, error) {
	var res Reclaimed
	if len(uids) == 0 {
		return res, nil
	}
	var sf runtimeapi.PodSandboxFilter
	var cf runtimeapi.ContainerFilter
	if m.opts.NodeName != "" {
		sf.LabelSelector = map[string]string{LabelNode: m.opts.NodeName}
		cf.LabelSelector = map[string]string{LabelNode: m.opts.NodeName}
	}
	sandboxes, err := m.rt.ListPodSandbox(ctx, &sf)
	if err != nil {
		return res, fmt.Errorf("list sandboxes: %w", err)
	}
	containers, err := m.rt.ListContainers(ctx, &cf)
	if err != nil {
		return res, fmt.Errorf("list containers: %w", err)
	}
	type held struct{ containers, sandboxes int }
	want := map[types.UID]*held{}
	for _, uid := range uids {
		if uid != "" { // never a selector matching unlabeled containers
			want[uid] = &held{}
		}
	}
	live := map[types.UID]bool{}
	for _, s := range sandboxes {
		uid := types.UID(s.Labels[LabelPodUID])
		if h := want[uid]; h != nil {
			h.sandboxes++
			live[uid] = live[uid] || s.State == runtimeapi.PodSandboxState_SANDBOX_READY
		}
	}
	for _, c := range containers {
		uid := types.UID(c.Labels[LabelPodUID])
		if h := want[uid]; h != nil {
			h.containers++
			live[uid] = live[uid] || c.State != runtimeapi.ContainerState_CONTAINER_EXITED
		}
	}
	var errs []error
	for _, uid := range uids {
		h := want[uid]
		if h == nil {
			continue // empty, or named twice
		}
		delete(want, uid)
		if live[uid] {
			klog.V(2).InfoS("Reclaim: terminated pod still has something running, left alone", "podUID", uid)
			continue
		}
		if h.containers == 0 && h.sandboxes == 0 && !m.hasPodContent(uid) {
			continue
		}
		if err := m.CleanupPod(ctx, uid); err != nil {
			errs = append(errs, err)
			continue
		}
		klog.InfoS("Reclaim: removed the content of a terminated pod", "podUID", uid, "containers", h.containers, "sandboxes", h.sandboxes)
		res.Pods++
		res.Containers += h.containers
		res.Sandboxes += h.sandboxes
	}
	return res, errors.Join(errs...)
}

// hasPodContent reports whether the pod's emptyDir volumes are still on
// disk (its logs go with its sandboxes: CleanupPod finds their directory
// through them).
func (m *Manager) hasPodContent(uid types.UID) bool {
	if m.opts.PodsDir == "" {
		return false
	}
	_, err := os.Stat(filepath.Join(m.opts.PodsDir, string(uid), "volumes", "emptydir"))
	return err == nil
}
