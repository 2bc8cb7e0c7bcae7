package eviction

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/node/hostfs"
)

// Stats is one reading of the node and its pods. A zero capacity means
// the signal could not be read: it is left out of the observations.
type Stats struct {
	// Memory: the node's capacity and working set (usage less inactive
	// file pages, as the kubelet reads the root cgroup).
	MemoryCapacity, MemoryWorkingSet uint64
	// MemoryInactiveFile is what the working set leaves out of the memory
	// cgroup's usage; MemoryCgroupDir, when set, is that cgroup v1
	// directory (memory-pressure notifications are armed on it).
	MemoryInactiveFile uint64
	MemoryCgroupDir    string
	// NodeFs is the filesystem of the agent's root directory, ImageFs the
	// runtime's image filesystem (CRI ImageFsInfo). ImageFsDedicated says
	// they are different filesystems (the kubelet's dedicatedImageFs): the
	// containers' writable layers then count on the image filesystem only.
	NodeFs, ImageFs  FsStats
	ImageFsDedicated bool
	// PIDMax is the kernel's pid limit, PIDs the processes running.
	PIDMax, PIDs uint64
	// Pods are the pods' usage by UID.
	Pods map[types.UID]PodStats
	Time time.Time
}

// FsStats is a filesystem's size and free space and inodes.
type FsStats = hostfs.Stats

// PodStats is one pod's usage.
type PodStats struct {
	// Containers are the pod's containers by name (the instances of a
	// restarted container summed).
	Containers []ContainerStats
	// Processes the pod runs (pid.available ranking).
	Processes uint64
	// Volumes and VolumeInodes are the disk usage of the pod's emptyDir
	// volumes, by volume name, in bytes and inodes.
	Volumes, VolumeInodes map[string]uint64
}

// ContainerStats is one container's usage.
type ContainerStats struct {
	Name string
	// MemoryWorkingSet, Rootfs (the writable layer CRI reports) and Logs
	// (its log files) in bytes; RootfsInodes and LogsInodes the inodes
	// the last two use.
	MemoryWorkingSet, Rootfs, Logs uint64
	RootfsInodes, LogsInodes       uint64
}

func (p PodStats) memory() uint64 {
	var n uint64
	for _, c := range p.Containers {
		n += c.MemoryWorkingSet
	}
	return n
}

func resourceBytes(n uint64) *resource.Quantity {
	return resource.NewQuantity(int64(n), resource.BinarySI)
}

// observation is a signal's available amount against its capacity.
type observation struct {
	available, capacity *resource.Quantity
}

// observe turns a reading into the signals' observations (the kubelet's
// makeSignalObservations).
func observe(s Stats) map[Signal]observation {
	out := map[Signal]observation{}
	q := func(n uint64) *resource.Quantity { return resource.NewQuantity(int64(n), resource.BinarySI) }
	dq := func(n uint64) *resource.Quantity { return resource.NewQuantity(int64(n), resource.DecimalSI) }
	if s.MemoryCapacity > 0 {
		avail := uint64(0)
		if s.MemoryWorkingSet < s.MemoryCapacity {
			avail = s.MemoryCapacity - s.MemoryWorkingSet
		}
		out[SignalMemoryAvailable] = observation{q(avail), q(s.MemoryCapacity)}
	}
	if s.NodeFs.Capacity > 0 {
		out[SignalNodeFsAvailable] = observation{q(s.NodeFs.Available), q(s.NodeFs.Capacity)}
	}
	if s.NodeFs.Inodes > 0 {
		out[SignalNodeFsInodesFree] = observation{dq(s.NodeFs.InodesFree), dq(s.NodeFs.Inodes)}
	}
	if s.ImageFs.Capacity > 0 {
		out[SignalImageFsAvailable] = observation{q(s.ImageFs.Available), q(s.ImageFs.Capacity)}
	}
	if s.ImageFs.Inodes > 0 {
		out[SignalImageFsInodesFree] = observation{dq(s.ImageFs.InodesFree), dq(s.ImageFs.Inodes)}
	}
	if s.PIDMax > 0 {
		avail := uint64(0)
		if s.PIDs < s.PIDMax {
			avail = s.PIDMax - s.PIDs
		}
		out[SignalPIDAvailable] = observation{dq(avail), dq(s.PIDMax)}
	}
	return out
}
