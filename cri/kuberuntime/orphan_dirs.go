package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"
)

// maxOrphanDirsPerSweep bounds how many pod directories one sweep
// removes; the rest wait for the next.
const maxOrphanDirsPerSweep = 256

// claimPodDir records that pod uid was synced since the agent started: a
// sweep never removes its directory (its own cleanup does). It waits for
// a sweep removing that directory right now (only that one).
func (m *Manager) claimPodDir(uid types.UID) {
	m.podDirsMu.Lock()
	defer m.podDirsMu.Unlock()
	for m.removingDirs[uid] {
		m.podDirsDone.Wait()
	}
	m.podDirs[uid] = true
}

// CleanupOrphanedPodDirs removes the directories under PodsDir of pods
// that keep does not name (the supervisor's desired, working and
// running pods), that the runtime has no sandbox of, and that were not
// synced since the agent started: what an agent that stopped before a
// pod's cleanup left, such as a memory emptyDir still mounted after the
// pod's sandbox went with the runtime (the kubelet's
// cleanupOrphanedPodDirs). Mounts below a directory are unmounted first;
// a directory whose unmount fails is kept. It returns how many it
// removed.
func (m *Manager) CleanupOrphanedPodDirs(ctx context.Context, keep func(types.UID) bool) (int, error) {
	if m.opts.PodsDir == "" {
		return 0, nil
	}
	entries, err := os.ReadDir(m.opts.PodsDir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("list pod directories: %w", err)
	}
	// The candidates: directories named as pod UIDs (only those are the
	// agent's) of pods not kept. Most sweeps find none, and then ask the
	// runtime nothing.
	var candidates []types.UID
	for _, e := range entries {
		uid := types.UID(e.Name())
		if e.IsDir() && len(validation.IsDNS1123Subdomain(e.Name())) == 0 && !keep(uid) {
			candidates = append(candidates, uid)
		}
	}
	if len(candidates) == 0 {
		return 0, nil
	}
	sandboxes, err := m.rt.ListPodSandbox(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("orphaned pod directories not swept: list sandboxes: %w", err)
	}
	inRuntime := map[types.UID]bool{}
	for _, s := range sandboxes {
		inRuntime[types.UID(s.GetMetadata().GetUid())] = true
	}
	removed := 0
	var errs []error
	for _, uid := range candidates {
		if inRuntime[uid] {
			continue
		}
		if removed == maxOrphanDirsPerSweep {
			break
		}
		if ok, err := m.removeOrphanedPodDir(uid); err != nil {
			errs = append(errs, err)
		} else if ok {
			removed++
		}
	}
	return removed, errors.Join(errs...)
}

// removeOrphanedPodDir removes pod uid's directory unless the pod was
// synced since the agent started, and says whether it did; a SyncPod of
// it waits until it is done.
func (m *Manager) removeOrphanedPodDir(uid types.UID) (bool, error) {
	m.podDirsMu.Lock()
	if m.podDirs[uid] {
		m.podDirsMu.Unlock()
		return false, nil
	}
	m.removingDirs[uid] = true
	m.podDirsMu.Unlock()
	defer func() {
		m.podDirsMu.Lock()
		delete(m.removingDirs, uid)
		m.podDirsDone.Broadcast()
		m.podDirsMu.Unlock()
	}()
	dir := filepath.Join(m.opts.PodsDir, string(uid))
	if err := unmountMemoryVolumes(filepath.Join(dir, "volumes", "emptydir")); err != nil {
		return false, fmt.Errorf("orphaned pod directory %s: %w", dir, err)
	}
	// Never remove through a mount (a volume of a kind the agent did not
	// make): what is below it is not the pod's directory.
	if left, err := mountsUnder(dir); err != nil || len(left) > 0 {
		return false, fmt.Errorf("orphaned pod directory %s kept: mounts below it %v (%v)", dir, left, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return false, fmt.Errorf("remove orphaned pod directory %s: %w", dir, err)
	}
	klog.InfoS("Removed the directory of an orphaned pod", "podUID", uid, "dir", dir)
	return true, nil
}

// mountsUnder lists the mount points at or below dir (mountinfo's fifth
// field; octal escapes as the kernel writes them, which a pod directory's
// path has none of).
func mountsUnder(dir string) ([]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			out = append(out, f[4])
		}
	}
	return out, nil
}
