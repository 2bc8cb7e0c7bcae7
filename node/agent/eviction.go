package agent

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/actors/eviction"
)

// Bounds of the eviction flags.
const (
	maxEvictionPeriod         = 24 * time.Hour
	minEvictionMonitoring     = 100 * time.Millisecond
	maxEvictionMaxPodGraceSec = 24 * 3600
)

func registerEvictionFlags(fs *flag.FlagSet, cfg *Config) {
	fs.StringVar(&cfg.EvictionHard, "eviction-hard", cfg.EvictionHard, "hard eviction thresholds, signal<value,... (memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available; a quantity or a percentage; 0 turns one off): a pod is evicted at once while one is met. Given, it replaces the whole default list, as the kubelet's. memory.available's and nodefs.available's count in the node's Allocatable")
	fs.StringVar(&cfg.EvictionSoft, "eviction-soft", cfg.EvictionSoft, "soft eviction thresholds, signal<value,...: a pod is evicted once one is met for its --eviction-soft-grace-period")
	fs.StringVar(&cfg.EvictionSoftGracePeriod, "eviction-soft-grace-period", cfg.EvictionSoftGracePeriod, "grace period of each soft threshold, signal=duration,... (e.g. memory.available=1m30s)")
	fs.StringVar(&cfg.EvictionMinimumReclaim, "eviction-minimum-reclaim", cfg.EvictionMinimumReclaim, "amount above a threshold a signal must recover to before the threshold is resolved, signal=value,... (e.g. memory.available=500Mi)")
	fs.Int64Var(&cfg.EvictionMaxPodGracePeriod, "eviction-max-pod-grace-period", cfg.EvictionMaxPodGracePeriod, "grace period in seconds of a pod evicted for a soft threshold (the pod's own when shorter)")
	fs.DurationVar(&cfg.EvictionPressureTransitionPeriod, "eviction-pressure-transition-period", cfg.EvictionPressureTransitionPeriod, "how long a pressure condition is held after its threshold is no longer met")
	fs.DurationVar(&cfg.EvictionMonitoringInterval, "eviction-monitoring-interval", cfg.EvictionMonitoringInterval, "how often the eviction manager reads the node's stats")
	fs.StringVar(&cfg.EvictionMemoryCgroup, "eviction-memory-cgroup", cfg.EvictionMemoryCgroup, "cgroup v1 memory cgroup whose working set is the node's memory use for memory.available (default /, the whole node)")
	fs.StringVar(&cfg.EvictionMemoryCapacity, "eviction-memory-capacity", cfg.EvictionMemoryCapacity, "memory capacity memory.available is computed against (a quantity; default the machine's memory)")
	fs.BoolVar(&cfg.LocalStorageCapacityIsolation, "local-storage-capacity-isolation", cfg.LocalStorageCapacityIsolation, "evict a pod whose emptyDir exceeds its sizeLimit or whose containers' writable layers, logs and emptyDirs exceed their ephemeral-storage limits, as the kubelet's localStorageCapacityIsolation")
}

// evictionThresholds parses the thresholds (errors name the flag).
func (c Config) evictionThresholds() ([]eviction.Threshold, error) {
	return eviction.ParseThresholds(eviction.Flags{Hard: c.EvictionHard, Soft: c.EvictionSoft,
		SoftGracePeriod: c.EvictionSoftGracePeriod, MinimumReclaim: c.EvictionMinimumReclaim})
}

func (c Config) validateEviction() []error {
	var errs []error
	if _, err := c.evictionThresholds(); err != nil {
		errs = append(errs, err)
	}
	if c.EvictionMaxPodGracePeriod < 0 || c.EvictionMaxPodGracePeriod > maxEvictionMaxPodGraceSec {
		errs = append(errs, fmt.Errorf("eviction-max-pod-grace-period: must be 0 to %d seconds, got %d", maxEvictionMaxPodGraceSec, c.EvictionMaxPodGracePeriod))
	}
	if c.EvictionPressureTransitionPeriod < 0 || c.EvictionPressureTransitionPeriod > maxEvictionPeriod {
		errs = append(errs, fmt.Errorf("eviction-pressure-transition-period: must be 0 to %s, got %s", maxEvictionPeriod, c.EvictionPressureTransitionPeriod))
	}
	if c.EvictionMonitoringInterval < minEvictionMonitoring || c.EvictionMonitoringInterval > maxEvictionPeriod {
		errs = append(errs, fmt.Errorf("eviction-monitoring-interval: must be %s to %s, got %s", minEvictionMonitoring, maxEvictionPeriod, c.EvictionMonitoringInterval))
	}
	if c.EvictionMemoryCapacity != "" {
		if q, err := resource.ParseQuantity(c.EvictionMemoryCapacity); err != nil || q.Sign() <= 0 {
			errs = append(errs, fmt.Errorf("eviction-memory-capacity: %q: want a positive quantity (like 512Mi)", c.EvictionMemoryCapacity))
		}
	}
	if slices.Contains(strings.Split(c.EvictionMemoryCgroup, "/"), "..") || len(c.EvictionMemoryCgroup) > 4096 {
		errs = append(errs, fmt.Errorf("eviction-memory-cgroup: %q: want a cgroup path like /actorlet", c.EvictionMemoryCgroup))
	}
	return errs
}

// evictionConfig is the eviction actor's configuration, or nil when no
// threshold is set.
func (a *Agent) evictionConfig() (*eviction.Config, error) {
	c := a.cfg
	ths, err := c.evictionThresholds()
	if err != nil {
		return nil, err
	}
	if len(ths) == 0 && !c.LocalStorageCapacityIsolation {
		klog.InfoS("Eviction off: no threshold set and local storage capacity isolation off")
		return nil, nil
	}
	stats := eviction.NodeStats{RootDir: c.RootDir, MemoryCgroup: c.EvictionMemoryCgroup}
	if c.LocalStorageCapacityIsolation {
		stats.PodsDir, stats.PodLogsDir = filepath.Join(c.RootDir, "pods"), c.PodLogsDir
	}
	if c.EvictionMemoryCapacity != "" {
		q, err := resource.ParseQuantity(c.EvictionMemoryCapacity)
		if err != nil {
			return nil, errors.New("eviction-memory-capacity: " + err.Error())
		}
		stats.MemoryCapacity = uint64(q.Value())
	}
	if rt, ok := a.runtime.(eviction.StatsRuntime); ok {
		stats.Runtime = rt
	} else {
		klog.InfoS("Eviction: the runtime reports no container stats; pods are ranked without their usage")
	}
	klog.InfoS("Eviction on", "hard", c.EvictionHard, "soft", c.EvictionSoft, "monitoringInterval", c.EvictionMonitoringInterval,
		"pressureTransitionPeriod", c.EvictionPressureTransitionPeriod, "memoryCgroup", c.EvictionMemoryCgroup, "memoryCapacity", c.EvictionMemoryCapacity,
		"localStorageCapacityIsolation", c.LocalStorageCapacityIsolation)
	return &eviction.Config{Thresholds: ths, MaxPodGracePeriodSeconds: c.EvictionMaxPodGracePeriod,
		PressureTransitionPeriod: c.EvictionPressureTransitionPeriod, MonitoringInterval: c.EvictionMonitoringInterval,
		Stats: stats.Read, Recorder: a.recorder, LocalStorageCapacityIsolation: c.LocalStorageCapacityIsolation,
		Reclaim: a.reclaimNodeResources}, nil
}

// reclaimNodeResources is the eviction manager's reclaim before a disk
// eviction, in the kubelet's order: what terminated pods left (dead
// containers, sandboxes, emptyDirs, logs), then every unused image (when
// image garbage collection is on).
func (a *Agent) reclaimNodeResources(ctx context.Context, terminated []types.UID) (eviction.Reclaimed, error) {
	var got eviction.Reclaimed
	var errs []error
	r, err := a.manager.ReclaimTerminatedPods(ctx, terminated)
	got.Pods, got.Containers, got.Sandboxes = r.Pods, r.Containers, r.Sandboxes
	if err != nil {
		errs = append(errs, fmt.Errorf("remove what terminated pods left: %w", err))
	}
	if a.imageGC != nil {
		res, err := a.imageGC.DeleteUnusedImages(ctx)
		got.Images, got.ImageBytes = res.Removed, res.Freed
		if err != nil {
			errs = append(errs, fmt.Errorf("delete unused images: %w", err))
		}
	}
	return got, errors.Join(errs...)
}
