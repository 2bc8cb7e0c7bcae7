package procruntime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// Per-container cgroups (see isolation.go): creation, limits, usage, removal.

// cgroupControllers are the v1 controllers a container's cgroup spans.
var cgroupControllers = []string{"memory", "cpu", "cpuacct", "pids"}

const cgroupParent = "actorlet"

// cgroupMounts finds the writable v1 hierarchy of each controller.
func cgroupMounts() (map[string]string, error) {
	out := map[string]string{}
	for _, ctrl := range cgroupControllers {
		for _, dir := range []string{ctrl, "cpu,cpuacct", "cpuacct,cpu"} {
			p := filepath.Join("/sys/fs/cgroup", dir)
			if dir != ctrl && !strings.Contains(dir, ctrl) {
				continue
			}
			if _, err := os.Stat(filepath.Join(p, "cgroup.procs")); err == nil {
				out[ctrl] = p
				break
			}
		}
		if out[ctrl] == "" {
			return nil, fmt.Errorf("cgroup v1 %s hierarchy not found under /sys/fs/cgroup", ctrl)
		}
		if err := os.MkdirAll(filepath.Join(out[ctrl], cgroupParent), 0o755); err != nil {
			return nil, fmt.Errorf("cgroup %s: %w", ctrl, err)
		}
	}
	return out, nil
}

// containerCgroups creates container id's cgroups, writes its resources
// and returns the directories (nil without cgroup isolation).
func (r *Runtime) containerCgroups(id string, res *runtimeapi.LinuxContainerResources) ([]string, error) {
	if r.iso == nil || !r.iso.mode.Cgroups {
		return nil, nil
	}
	var dirs []string
	for _, ctrl := range cgroupControllers {
		d := r.cgroupDir(ctrl, id)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("create cgroup: %w", err)
		}
		dirs = append(dirs, d)
	}
	if err := r.applyResources(id, res); err != nil {
		return nil, err
	}
	return dirs, nil
}

func (r *Runtime) cgroupFile(ctrl, id, file string) string {
	return filepath.Join(r.cgroupDir(ctrl, id), file)
}

// cgroupDir is container id's cgroup in controller ctrl's hierarchy: under
// its sandbox's cgroup_parent, else under "actorlet".
func (r *Runtime) cgroupDir(ctrl, id string) string {
	parent := cgroupParent
	if p, ok := r.cgroupParents.Load(id); ok {
		parent = p.(string)
	}
	return filepath.Join(r.iso.cgroups[ctrl], parent, id)
}

// maxCgroupParent bounds a sandbox's cgroup_parent.
const maxCgroupParent = 1024

// sandboxCgroupParent checks a sandbox config's cgroup_parent (a cgroupfs
// path, as the kubelet's cgroupfs driver gives) and returns it relative to
// each hierarchy's root, "" for the runtime's default.
func sandboxCgroupParent(config *runtimeapi.PodSandboxConfig) (string, error) {
	p := config.GetLinux().GetCgroupParent()
	switch {
	case p == "":
		return "", nil
	case len(p) > maxCgroupParent:
		return "", fmt.Errorf("config.linux.cgroup_parent: %d bytes, limit is %d", len(p), maxCgroupParent)
	case strings.HasSuffix(p, ".slice"):
		return "", fmt.Errorf("config.linux.cgroup_parent %q: a systemd slice; the process runtime manages cgroupfs paths (kubelet cgroupDriver: cgroupfs)", p)
	case strings.ContainsRune(p, 0):
		return "", fmt.Errorf("config.linux.cgroup_parent: contains a NUL byte")
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", fmt.Errorf("config.linux.cgroup_parent %q: must not contain \"..\"", p)
		}
	}
	return strings.TrimPrefix(filepath.Clean("/"+p), "/"), nil
}

// setCgroupParent records the cgroup parent of container id (from its
// sandbox's config; "" keeps the default).
func (r *Runtime) setCgroupParent(id string, sb *runtimeapi.PodSandboxConfig) {
	if p, err := sandboxCgroupParent(sb); err == nil && p != "" {
		r.cgroupParents.Store(id, p)
	}
}

// applyResources writes memory and CPU limits into the container's
// cgroup, if it has one.
func (r *Runtime) applyResources(id string, res *runtimeapi.LinuxContainerResources) error {
	if r.iso == nil || !r.iso.mode.Cgroups || res == nil {
		return nil
	}
	if _, err := os.Stat(r.cgroupFile("memory", id, "")); err != nil {
		return nil // not started yet: written at start
	}
	write := func(ctrl, file string, v int64) error {
		if err := os.WriteFile(r.cgroupFile(ctrl, id, file), []byte(strconv.FormatInt(v, 10)), 0o644); err != nil {
			return fmt.Errorf("set %s: %w", file, err)
		}
		return nil
	}
	if v := res.GetMemoryLimitInBytes(); v > 0 {
		if err := write("memory", "memory.limit_in_bytes", v); err != nil {
			return err
		}
	}
	if v := res.GetCpuShares(); v > 0 {
		if err := write("cpu", "cpu.shares", v); err != nil {
			return err
		}
	}
	if v := res.GetCpuPeriod(); v > 0 {
		if err := write("cpu", "cpu.cfs_period_us", v); err != nil {
			return err
		}
	}
	if v := res.GetCpuQuota(); v != 0 {
		if err := write("cpu", "cpu.cfs_quota_us", v); err != nil {
			return err
		}
	}
	return nil
}

// cgroupRemoveTimeout bounds the wait for a cgroup to empty.
const cgroupRemoveTimeout = 2 * time.Second

// removeCgroups removes container id's cgroups (its processes are gone).
func (r *Runtime) removeCgroups(id string) {
	if r.iso == nil || !r.iso.mode.Cgroups {
		return
	}
	for _, ctrl := range cgroupControllers {
		d := r.cgroupDir(ctrl, id)
		// A killed container's last processes may still be leaving (a
		// zombie waiting for the pod's init counts): EBUSY for a moment.
		var err error
		for deadline := time.Now().Add(cgroupRemoveTimeout); ; time.Sleep(10 * time.Millisecond) {
			if err = os.Remove(d); err == nil || errors.Is(err, os.ErrNotExist) || !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
				break
			}
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			klog.InfoS("Failed to remove container cgroup", "dir", d, "err", err)
		}
	}
}

// cgroupUsage reads a container's usage from its cgroup.
func (r *Runtime) cgroupUsage(id string) (procUsage, bool) {
	if r.iso == nil || !r.iso.mode.Cgroups {
		return procUsage{}, false
	}
	readUint := func(ctrl, file string) (uint64, bool) {
		b, err := os.ReadFile(r.cgroupFile(ctrl, id, file))
		if err != nil {
			return 0, false
		}
		n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		return n, err == nil
	}
	u := procUsage{at: time.Now(), fromCgroup: true}
	var ok bool
	if u.cpuNanos, ok = readUint("cpuacct", "cpuacct.usage"); !ok {
		return procUsage{}, false
	}
	usage, _ := readUint("memory", "memory.usage_in_bytes")
	// Working set as the kubelet computes it: usage minus inactive file.
	inactive := memoryStat(r.cgroupFile("memory", id, "memory.stat"), "total_inactive_file")
	if inactive < usage {
		u.rssBytes = usage - inactive
	}
	u.processes, _ = readUint("pids", "pids.current")
	return u, true
}

// oomKilled reports whether the kernel's OOM killer killed a process in
// the container's memory cgroup (among dirs).
func oomKilled(dirs []string) bool {
	for _, d := range dirs {
		if n := memoryStat(filepath.Join(d, "memory.oom_control"), "oom_kill"); n > 0 {
			return true
		}
	}
	return false
}

func memoryStat(path, key string) uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+" "); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// joinCgroups moves the calling shim into dirs (its container inherits
// them at fork); leaveCgroups moves it back to the parent.
func joinCgroups(dirs []string) error {
	for _, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte("0"), 0o644); err != nil {
			return fmt.Errorf("join cgroup %s: %w", d, err)
		}
	}
	return nil
}

func leaveCgroups(dirs []string) {
	for _, d := range dirs {
		_ = os.WriteFile(filepath.Join(filepath.Dir(d), "cgroup.procs"), []byte("0"), 0o644)
	}
}
