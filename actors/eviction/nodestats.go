package eviction

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/cri/kuberuntime"
	"github.com/actorlet/actorlet/node/hostfs"
)

// StatsRuntime is what the stats reader asks the CRI runtime (cri.Client).
type StatsRuntime interface {
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
	ListContainerStats(ctx context.Context) ([]*runtimeapi.ContainerStats, error)
}

// NodeStats reads the node's signals and its pods' usage.
type NodeStats struct {
	// RootDir is on the node filesystem (nodefs): the agent's root dir.
	RootDir string
	Runtime StatsRuntime
	// MemoryCgroup is the cgroup v1 memory cgroup (a path under
	// /sys/fs/cgroup/memory, "/" the node's root) whose working set is the
	// node's memory use; default "/". MemoryCapacity, when not zero,
	// replaces the machine's memory (MemTotal) as the capacity. Together
	// they confine memory.available to a part of the machine: the pods'
	// cgroup with a capacity of its own (tests and small edge boxes).
	MemoryCgroup   string
	MemoryCapacity uint64
	// ProcRoot and CgroupRoot default to /proc and /sys/fs/cgroup.
	ProcRoot, CgroupRoot string
	// PodsDir (<PodsDir>/<uid>/volumes/emptydir/<name>) and PodLogsDir
	// (<PodLogsDir>/<ns>_<name>_<uid>/<container>/) are walked for the
	// pods' emptyDir and log usage (local-storage eviction, disk ranking);
	// empty, that usage is not read.
	PodsDir, PodLogsDir string
}

// Read is one reading (Config.Stats). A signal that cannot be read is
// left out (logged by the caller through the error only when nothing
// could be read).
func (n NodeStats) Read(ctx context.Context) (Stats, error) {
	proc, cg := orDefault(n.ProcRoot, "/proc"), orDefault(n.CgroupRoot, "/sys/fs/cgroup")
	s := Stats{Time: time.Now(), Pods: map[types.UID]PodStats{}}
	var errs []error
	if err := n.memory(proc, cg, &s); err != nil {
		errs = append(errs, err)
	}
	if n.RootDir != "" {
		fs, err := hostfs.Stat(n.RootDir)
		if err != nil {
			errs = append(errs, err)
		}
		s.NodeFs = fs
	}
	if max, err := readUint(filepath.Join(proc, "sys/kernel/pid_max")); err != nil {
		errs = append(errs, err)
	} else if pids, err := countProcesses(proc); err != nil {
		errs = append(errs, err)
	} else {
		s.PIDMax, s.PIDs = max, pids
	}
	if n.Runtime != nil {
		if info, err := n.Runtime.ImageFsInfo(ctx); err != nil {
			errs = append(errs, err)
		} else if fss := info.GetImageFilesystems(); len(fss) > 0 && fss[0].GetFsId().GetMountpoint() != "" {
			mp := fss[0].GetFsId().GetMountpoint()
			fs, err := hostfs.Stat(mp)
			if err != nil {
				errs = append(errs, err)
			}
			s.ImageFs = fs
			if n.RootDir != "" {
				s.ImageFsDedicated = !sameFilesystem(n.RootDir, mp)
			}
		}
		stats, err := n.Runtime.ListContainerStats(ctx)
		if err != nil {
			errs = append(errs, err)
		}
		for _, c := range stats {
			labels := c.GetAttributes().GetLabels()
			uid := types.UID(labels[cri.LabelPodUID])
			if uid == "" {
				continue
			}
			ps := s.Pods[uid]
			cs := ps.container(labels[kuberuntime.LabelContainerName])
			cs.MemoryWorkingSet += c.GetMemory().GetWorkingSetBytes().GetValue()
			cs.Rootfs += c.GetWritableLayer().GetUsedBytes().GetValue()
			cs.RootfsInodes += c.GetWritableLayer().GetInodesUsed().GetValue()
			s.Pods[uid] = ps
		}
	}
	if err := n.localStorage(ctx, &s); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return s, errors.Join(errs...)
	}
	return s, nil
}

// memory reads the capacity (MemTotal, or the configured one) and the
// working set: the memory cgroup's usage less its inactive file pages (as
// the kubelet's cadvisor), or MemTotal less MemAvailable where the cgroup
// has no usage file (the root of cgroup v2).
func (n NodeStats) memory(proc, cg string, s *Stats) error {
	info, err := meminfo(filepath.Join(proc, "meminfo"))
	if err != nil {
		return err
	}
	s.MemoryCapacity = info["MemTotal"]
	if n.MemoryCapacity > 0 {
		s.MemoryCapacity = n.MemoryCapacity
	}
	dir := filepath.Join(cg, "memory", filepath.Clean("/"+orDefault(n.MemoryCgroup, "/")))
	usage, err := readUint(filepath.Join(dir, "memory.usage_in_bytes"))
	if err != nil {
		if n.MemoryCgroup != "" && n.MemoryCgroup != "/" {
			s.MemoryCapacity = 0
			return fmt.Errorf("memory cgroup %s: %w", dir, err)
		}
		s.MemoryWorkingSet = info["MemTotal"] - min(info["MemAvailable"], info["MemTotal"])
		return nil
	}
	inactive := uint64(0)
	if st, err := meminfoLike(filepath.Join(dir, "memory.stat"), " "); err == nil {
		inactive = st["total_inactive_file"]
	}
	if inactive < usage {
		usage -= inactive
	} else {
		usage = 0
	}
	s.MemoryWorkingSet, s.MemoryInactiveFile, s.MemoryCgroupDir = usage, inactive, dir
	return nil
}

// sameFilesystem reports whether a and b are on one filesystem (a path
// that cannot be stat'ed counts as the same: no dedicated filesystem is
// assumed without proof).
func sameFilesystem(a, b string) bool {
	var sa, sb unix.Stat_t
	if unix.Stat(a, &sa) != nil || unix.Stat(b, &sb) != nil {
		return true
	}
	return sa.Dev == sb.Dev
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// meminfo reads /proc/meminfo in bytes.
func meminfo(path string) (map[string]uint64, error) {
	m, err := meminfoLike(path, ":")
	for k, v := range m {
		m[k] = v * 1024
	}
	return m, err
}

// meminfoLike reads "key<sep> value [kB]" lines.
func meminfoLike(path, sep string) (map[string]uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), sep)
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		if n, err := strconv.ParseUint(fields[0], 10, 64); err == nil {
			out[strings.TrimSpace(k)] = n
		}
	}
	return out, sc.Err()
}

// countProcesses counts the processes in /proc (the kubelet's
// pid.available counts them the same way).
func countProcesses(proc string) (uint64, error) {
	entries, err := os.ReadDir(proc)
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err == nil && e.IsDir() {
			n++
		}
	}
	return n, nil
}
