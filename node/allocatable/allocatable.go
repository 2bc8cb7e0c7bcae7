// Package allocatable computes what a node offers its pods, as the
// kubelet's node container manager does:
//
//	Allocatable = Capacity − system-reserved − kube-reserved − hard eviction threshold
//
// It parses the flags that feed it (--system-reserved, --kube-reserved,
// the hard eviction thresholds) and reads the host's capacity. The QoS
// cgroup manager (cri/cm) enforces the result on the kubepods cgroup;
// admission and the node record report it.
package allocatable

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/actorlet/actorlet/node/hostfs"
)

// ResourcePID is the reservation of process IDs (--kube-reserved
// pid=1000), as the kubelet names it. It is enforced on the kubepods
// cgroup's pids limit; it is not part of the node's Allocatable list.
const ResourcePID v1.ResourceName = "pid"

// Limits on the flags' values.
const (
	// MaxFlagLength bounds a reservation or threshold flag's value.
	MaxFlagLength = 1024
	// MaxEntries bounds the key=value pairs of one flag.
	MaxEntries = 16
)

// Eviction signals, as the kubelet names them.
const (
	SignalMemoryAvailable   = "memory.available"
	SignalNodeFsAvailable   = "nodefs.available"
	SignalNodeFsInodesFree  = "nodefs.inodesFree"
	SignalImageFsAvailable  = "imagefs.available"
	SignalImageFsInodesFree = "imagefs.inodesFree"
	SignalPIDAvailable      = "pid.available"
)

// DefaultEvictionHard is the kubelet's default --eviction-hard.
const DefaultEvictionHard = "memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%"

var signals = map[string]bool{
	SignalMemoryAvailable: true, SignalNodeFsAvailable: true, SignalNodeFsInodesFree: true,
	SignalImageFsAvailable: true, SignalImageFsInodesFree: true, SignalPIDAvailable: true,
}

// Threshold is one eviction threshold: an absolute quantity, or a
// percentage (0 < Percentage ≤ 1) of the signal's capacity.
type Threshold struct {
	Quantity   *resource.Quantity
	Percentage float64
}

// Value is the threshold in the unit of capacity.
func (t Threshold) Value(capacity int64) int64 {
	if t.Quantity != nil {
		return t.Quantity.Value()
	}
	return int64(t.Percentage * float64(capacity))
}

func (t Threshold) String() string {
	if t.Quantity != nil {
		return t.Quantity.String()
	}
	return strconv.FormatFloat(t.Percentage*100, 'f', -1, 64) + "%"
}

// Config is the node's reservations.
type Config struct {
	SystemReserved v1.ResourceList
	KubeReserved   v1.ResourceList
	// EvictionHard maps a signal to its hard threshold; memory.available
	// counts in Allocatable's memory, nodefs.available in its
	// ephemeral-storage.
	EvictionHard map[string]Threshold
}

// splitPairs splits "k=v,k=v" (or "k<v,...") with the flag's limits.
func splitPairs(flag, s, sep string) ([][2]string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	if len(s) > MaxFlagLength {
		return nil, fmt.Errorf("%s: %d bytes, limit is %d", flag, len(s), MaxFlagLength)
	}
	parts := strings.Split(s, ",")
	if len(parts) > MaxEntries {
		return nil, fmt.Errorf("%s: %d entries, limit is %d", flag, len(parts), MaxEntries)
	}
	out := make([][2]string, 0, len(parts))
	seen := map[string]bool{}
	for _, p := range parts {
		k, v, ok := strings.Cut(strings.TrimSpace(p), sep)
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("%s: %q: want KEY%sVALUE", flag, p, sep)
		}
		if seen[k] {
			return nil, fmt.Errorf("%s: %s given twice", flag, k)
		}
		seen[k] = true
		out = append(out, [2]string{k, v})
	}
	return out, nil
}

// ParseReservation parses a --system-reserved / --kube-reserved value:
// cpu=100m,memory=256Mi,ephemeral-storage=1Gi,pid=1000. flag names the
// flag in errors.
func ParseReservation(flag, s string) (v1.ResourceList, error) {
	pairs, err := splitPairs(flag, s, "=")
	if err != nil {
		return nil, err
	}
	out := v1.ResourceList{}
	for _, kv := range pairs {
		name := v1.ResourceName(kv[0])
		switch name {
		case v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage, ResourcePID:
		default:
			return nil, fmt.Errorf("%s: %s: unknown resource (cpu, memory, ephemeral-storage, pid)", flag, kv[0])
		}
		q, err := resource.ParseQuantity(kv[1])
		if err != nil {
			return nil, fmt.Errorf("%s: %s=%s: %w", flag, kv[0], kv[1], err)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("%s: %s=%s: must not be negative", flag, kv[0], kv[1])
		}
		out[name] = q
	}
	return out, nil
}

// ParseEvictionHard parses an --eviction-hard value:
// memory.available<100Mi,nodefs.available<10%.
func ParseEvictionHard(flag, s string) (map[string]Threshold, error) {
	pairs, err := splitPairs(flag, s, "<")
	if err != nil {
		return nil, err
	}
	out := map[string]Threshold{}
	for _, kv := range pairs {
		if !signals[kv[0]] {
			return nil, fmt.Errorf("%s: %s: unknown signal (%s)", flag, kv[0], strings.Join(signalNames(), ", "))
		}
		if p, ok := strings.CutSuffix(kv[1], "%"); ok {
			f, err := strconv.ParseFloat(p, 64)
			if err != nil || f <= 0 || f > 100 {
				return nil, fmt.Errorf("%s: %s<%s: a percentage must be a number in (0, 100]", flag, kv[0], kv[1])
			}
			out[kv[0]] = Threshold{Percentage: f / 100}
			continue
		}
		q, err := resource.ParseQuantity(kv[1])
		if err != nil {
			return nil, fmt.Errorf("%s: %s<%s: %w", flag, kv[0], kv[1], err)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("%s: %s<%s: must not be negative", flag, kv[0], kv[1])
		}
		out[kv[0]] = Threshold{Quantity: &q}
	}
	return out, nil
}

func signalNames() []string {
	out := make([]string, 0, len(signals))
	for s := range signals {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Reservation is what is held back from capacity: system-reserved plus
// kube-reserved plus the hard eviction thresholds of memory and nodefs
// (the kubelet's GetNodeAllocatableReservation).
func (c Config) Reservation(capacity v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	add := func(name v1.ResourceName, q resource.Quantity) {
		sum := out[name]
		sum.Add(q)
		out[name] = sum
	}
	for _, l := range []v1.ResourceList{c.SystemReserved, c.KubeReserved} {
		for name, q := range l {
			add(name, q)
		}
	}
	for signal, name := range map[string]v1.ResourceName{SignalMemoryAvailable: v1.ResourceMemory, SignalNodeFsAvailable: v1.ResourceEphemeralStorage} {
		t, ok := c.EvictionHard[signal]
		if !ok {
			continue
		}
		capQ := capacity[name]
		add(name, *resource.NewQuantity(t.Value(capQ.Value()), resource.BinarySI))
	}
	return out
}

// Allocatable is capacity minus the reservation, never below zero, for
// each resource of capacity.
func (c Config) Allocatable(capacity v1.ResourceList) v1.ResourceList {
	return subtract(capacity, c.Reservation(capacity))
}

// PodsLimit is what the kubepods cgroup is limited to when
// --enforce-node-allocatable has "pods": capacity minus system-reserved
// and kube-reserved (the kubelet leaves the eviction threshold out, so
// that eviction, not the OOM killer, acts first), pid included.
func (c Config) PodsLimit(capacity v1.ResourceList) v1.ResourceList {
	return subtract(capacity, Config{SystemReserved: c.SystemReserved, KubeReserved: c.KubeReserved}.Reservation(capacity))
}

func subtract(capacity, reserved v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for name, q := range capacity {
		v := q.DeepCopy()
		if r, ok := reserved[name]; ok {
			v.Sub(r)
			if v.Sign() < 0 {
				v = *resource.NewQuantity(0, q.Format)
			}
		}
		out[name] = v
	}
	return out
}

// EphemeralStorage is the node's ephemeral-storage capacity, as the
// kubelet reports it: the size of the filesystem holding its root
// directory (statfs).
func EphemeralStorage(rootDir string) (resource.Quantity, error) {
	st, err := hostfs.Stat(rootDir)
	if err != nil {
		return resource.Quantity{}, fmt.Errorf("ephemeral-storage capacity: %w", err)
	}
	return *resource.NewQuantity(int64(min(st.Capacity, math.MaxInt64)), resource.BinarySI), nil
}

// Capacity is the host's capacity: its CPUs, memTotal bytes of memory
// (left out when 0) and maxPods pods.
func Capacity(maxPods int, memTotal int64) v1.ResourceList {
	l := v1.ResourceList{
		v1.ResourceCPU:  *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
		v1.ResourcePods: *resource.NewQuantity(int64(maxPods), resource.DecimalSI),
	}
	if memTotal > 0 {
		l[v1.ResourceMemory] = *resource.NewQuantity(memTotal, resource.BinarySI)
	}
	return l
}
