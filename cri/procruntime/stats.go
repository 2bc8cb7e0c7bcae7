package procruntime

import (
	"bytes"
	"context"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Stats. A container's usage is that of its processes: its process group
// (the group the shim started it in; a process that left the group with
// setsid/setpgid is not counted), read from /proc/<pid>/stat (CPU time,
// including reaped children's, and resident memory), or from the
// container's cgroup when it has one (isolation.go). CPU nano-cores are the
// rate between two successive stats calls. The writable layer is the
// container's state directory (there is no image layer). A sandbox's
// usage is the sum of its containers'.

const (
	clockTicks = 100 // USER_HZ on Linux
)

var pageSize = uint64(os.Getpagesize())

// procUsage is one sample of a process group's usage.
type procUsage struct {
	cpuNanos   uint64 // user+system, including reaped children
	rssBytes   uint64
	processes  uint64
	at         time.Time
	fromCgroup bool
}

// groupUsage sums /proc/<pid>/stat of every live process in process group
// pgid (0 and no error for a group that is gone).
func groupUsage(pgid int) procUsage {
	u := procUsage{at: time.Now()}
	if pgid <= 0 {
		return u
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return u
	}
	want := strconv.Itoa(pgid)
	for _, e := range entries {
		name := e.Name()
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		// f[0] is field 3 (state): pgrp is f[2], utime..cstime f[11..14],
		// rss f[21].
		if len(f) < 22 || f[2] != want || f[0] == "Z" || f[0] == "X" {
			continue
		}
		var ticks uint64
		for _, k := range []int{11, 12, 13, 14} {
			n, _ := strconv.ParseUint(f[k], 10, 64)
			ticks += n
		}
		rss, _ := strconv.ParseUint(f[21], 10, 64)
		u.cpuNanos += ticks * uint64(time.Second/clockTicks)
		u.rssBytes += rss * pageSize
		u.processes++
	}
	return u
}

// statsCache keeps the previous CPU sample per container for nano-cores.
type statsCache struct {
	mu   sync.Mutex
	prev map[string]procUsage
}

func (s *statsCache) nanoCores(id string, u procUsage) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prev == nil {
		s.prev = map[string]procUsage{}
	}
	p, ok := s.prev[id]
	s.prev[id] = u
	if !ok || !u.at.After(p.at) || u.cpuNanos < p.cpuNanos {
		return 0
	}
	return uint64(float64(u.cpuNanos-p.cpuNanos) / u.at.Sub(p.at).Seconds())
}

func (s *statsCache) forget(keep map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id := range s.prev {
		if !keep[id] {
			delete(s.prev, id)
		}
	}
}

// statTarget is what stats need of a container, copied under r.mu.
type statTarget struct {
	id, sandboxID string
	meta          *runtimeapi.ContainerMetadata
	labels        map[string]string
	annotations   map[string]string
	pgid          int
	running       bool
}

func (r *Runtime) statTargetLocked(c *container) statTarget {
	return statTarget{
		id:          c.rec.ID,
		sandboxID:   c.rec.SandboxID,
		meta:        c.config.GetMetadata(),
		labels:      c.config.GetLabels(),
		annotations: c.config.GetAnnotations(),
		pgid:        c.rec.Process.PID,
		running:     c.state() == runtimeapi.ContainerState_CONTAINER_RUNNING,
	}
}

func (r *Runtime) usageOf(t statTarget) procUsage {
	if !t.running {
		return procUsage{at: time.Now()}
	}
	if u, ok := r.cgroupUsage(t.id); ok {
		return u
	}
	return groupUsage(t.pgid)
}

func (r *Runtime) containerStats(t statTarget) *runtimeapi.ContainerStats {
	u := r.usageOf(t)
	ts := u.at.UnixNano()
	bytes, inodes := diskUsage(r.containerDir(t.id))
	return &runtimeapi.ContainerStats{
		Attributes: &runtimeapi.ContainerAttributes{
			Id:          t.id,
			Metadata:    t.meta,
			Labels:      t.labels,
			Annotations: t.annotations,
		},
		Cpu: &runtimeapi.CpuUsage{
			Timestamp:            ts,
			UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: u.cpuNanos},
			UsageNanoCores:       &runtimeapi.UInt64Value{Value: r.stats.nanoCores(t.id, u)},
		},
		Memory: &runtimeapi.MemoryUsage{
			Timestamp:       ts,
			WorkingSetBytes: &runtimeapi.UInt64Value{Value: u.rssBytes},
			RssBytes:        &runtimeapi.UInt64Value{Value: u.rssBytes},
			UsageBytes:      &runtimeapi.UInt64Value{Value: u.rssBytes},
		},
		WritableLayer: &runtimeapi.FilesystemUsage{
			Timestamp:  ts,
			FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: r.containerDir(t.id)},
			UsedBytes:  &runtimeapi.UInt64Value{Value: bytes},
			InodesUsed: &runtimeapi.UInt64Value{Value: inodes},
		},
	}
}

// ContainerStats reports one container's usage.
func (r *Runtime) ContainerStats(ctx context.Context, req *runtimeapi.ContainerStatsRequest) (*runtimeapi.ContainerStatsResponse, error) {
	r.mu.Lock()
	c, err := lookup(r.containers, "container", req.GetContainerId())
	var t statTarget
	if err == nil {
		t = r.statTargetLocked(c)
	}
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ContainerStatsResponse{Stats: r.containerStats(t)}, nil
}

// ListContainerStats reports the usage of the containers matching the
// filter (by ID prefix, sandbox ID prefix and labels).
func (r *Runtime) ListContainerStats(ctx context.Context, req *runtimeapi.ListContainerStatsRequest) (*runtimeapi.ListContainerStatsResponse, error) {
	f := req.GetFilter()
	r.mu.Lock()
	var targets []statTarget
	all := map[string]bool{}
	for id, c := range r.containers {
		all[id] = true
		if !strings.HasPrefix(id, f.GetId()) || !strings.HasPrefix(c.rec.SandboxID, f.GetPodSandboxId()) || !matchLabels(c.config.GetLabels(), f.GetLabelSelector()) {
			continue
		}
		targets = append(targets, r.statTargetLocked(c))
	}
	r.mu.Unlock()
	r.stats.forget(all)
	sort.Slice(targets, func(i, j int) bool { return targets[i].id < targets[j].id })
	out := make([]*runtimeapi.ContainerStats, 0, len(targets))
	for _, t := range targets {
		out = append(out, r.containerStats(t))
	}
	return &runtimeapi.ListContainerStatsResponse{Stats: out}, nil
}

func (r *Runtime) sandboxStats(s *runtimeapi.PodSandboxStatus, targets []statTarget) *runtimeapi.PodSandboxStats {
	var cpu, cores, mem uint64
	var procs uint64
	var cs []*runtimeapi.ContainerStats
	now := time.Now().UnixNano()
	for _, t := range targets {
		st := r.containerStats(t)
		cs = append(cs, st)
		cpu += st.Cpu.UsageCoreNanoSeconds.GetValue()
		cores += st.Cpu.UsageNanoCores.GetValue()
		mem += st.Memory.WorkingSetBytes.GetValue()
		if t.running {
			procs += r.usageOf(t).processes
		}
	}
	return &runtimeapi.PodSandboxStats{
		Attributes: &runtimeapi.PodSandboxAttributes{
			Id:          s.GetId(),
			Metadata:    s.GetMetadata(),
			Labels:      s.GetLabels(),
			Annotations: s.GetAnnotations(),
		},
		Linux: &runtimeapi.LinuxPodSandboxStats{
			Cpu: &runtimeapi.CpuUsage{
				Timestamp:            now,
				UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: cpu},
				UsageNanoCores:       &runtimeapi.UInt64Value{Value: cores},
			},
			Memory: &runtimeapi.MemoryUsage{
				Timestamp:       now,
				WorkingSetBytes: &runtimeapi.UInt64Value{Value: mem},
				RssBytes:        &runtimeapi.UInt64Value{Value: mem},
				UsageBytes:      &runtimeapi.UInt64Value{Value: mem},
			},
			Process:    &runtimeapi.ProcessUsage{Timestamp: now, ProcessCount: &runtimeapi.UInt64Value{Value: procs}},
			Containers: cs,
		},
	}
}

// sandboxTargetsLocked returns the sandbox's status and its containers'
// stat targets.
func (r *Runtime) sandboxTargetsLocked(s *sandbox) (*runtimeapi.PodSandboxStatus, []statTarget) {
	var targets []statTarget
	for _, c := range r.containers {
		if c.rec.SandboxID == s.rec.ID {
			targets = append(targets, r.statTargetLocked(c))
		}
	}
	sort.Slice(targets, func(i, j int) bool { return targets[i].id < targets[j].id })
	return r.sandboxStatusLocked(s), targets
}

// PodSandboxStats reports one sandbox's usage.
func (r *Runtime) PodSandboxStats(ctx context.Context, req *runtimeapi.PodSandboxStatsRequest) (*runtimeapi.PodSandboxStatsResponse, error) {
	r.mu.Lock()
	s, err := lookup(r.sandboxes, "sandbox", req.GetPodSandboxId())
	var st *runtimeapi.PodSandboxStatus
	var targets []statTarget
	if err == nil {
		st, targets = r.sandboxTargetsLocked(s)
	}
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &runtimeapi.PodSandboxStatsResponse{Stats: r.sandboxStats(st, targets)}, nil
}

// ListPodSandboxStats reports the usage of the sandboxes matching the
// filter (by ID prefix and labels).
func (r *Runtime) ListPodSandboxStats(ctx context.Context, req *runtimeapi.ListPodSandboxStatsRequest) (*runtimeapi.ListPodSandboxStatsResponse, error) {
	f := req.GetFilter()
	type item struct {
		st      *runtimeapi.PodSandboxStatus
		targets []statTarget
	}
	r.mu.Lock()
	var items []item
	for id, s := range r.sandboxes {
		if !strings.HasPrefix(id, f.GetId()) || !matchLabels(s.config.GetLabels(), f.GetLabelSelector()) {
			continue
		}
		st, targets := r.sandboxTargetsLocked(s)
		items = append(items, item{st, targets})
	}
	r.mu.Unlock()
	sort.Slice(items, func(i, j int) bool { return items[i].st.CreatedAt < items[j].st.CreatedAt })
	out := make([]*runtimeapi.PodSandboxStats, 0, len(items))
	for _, it := range items {
		out = append(out, r.sandboxStats(it.st, it.targets))
	}
	return &runtimeapi.ListPodSandboxStatsResponse{Stats: out}, nil
}
