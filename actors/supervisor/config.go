package supervisor

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/actorlet/actorlet/actors/podactor"
	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages/podrules"
	"github.com/actorlet/actorlet/messages/record"
)

// Runtime is what the sync loop needs from the runtime manager: what pod
// actors need, plus listing, dead-container removal, cleanup and GC.
type Runtime interface {
	podactor.Runtime
	// GetPods lists the runtime's pods (running ones unless all).
	GetPods(ctx context.Context, all bool) ([]*cri.Pod, error)
	// RemoveDeadContainers removes exited containers beyond the kept count.
	RemoveDeadContainers(ctx context.Context, uid types.UID) error
	// CleanupPod removes what the agent keeps for a pod no longer wanted.
	CleanupPod(ctx context.Context, uid types.UID) error
	// GC garbage-collects containers, sandboxes and back-off entries.
	GC()
	// CleanupOrphanedPodDirs removes the directories of pods keep does
	// not name that the runtime has no sandbox of (left by an agent that
	// stopped before their cleanup), returning how many.
	CleanupOrphanedPodDirs(ctx context.Context, keep func(types.UID) bool) (int, error)
}

// Cache is the PLEG status cache, as pod actors use it.
type Cache = podactor.Cache

// Clock is the time the sync loop runs on: tickers for its loops and
// delayed calls for restart back-off. clock.RealClock and the testing
// FakeClock satisfy it.
type Clock interface {
	clock.WithTicker
	AfterFunc(d time.Duration, f func()) clock.Timer
}

// Children are the optional props of the supervisor's non-pod children,
// made afresh for every spawn (Configure changes props in place).
type Children struct {
	PLEG   func() (*actor.Props, error)
	Prober func() (*actor.Props, error)
	Status func() (*actor.Props, error)
	// Eviction, optional, is the eviction manager (actors/eviction): it
	// tells the supervisor NodePressureChanged and TerminatePod.
	Eviction func() (*actor.Props, error)
}

// Config configures the sync loop.
type Config struct {
	Runtime     Runtime
	Cache       Cache
	Clock       Clock
	NodeName    string
	NodeLabels  map[string]string
	Allocatable v1.ResourceList // nil: resources are not checked
	MaxPods     int             // default 110
	// Admit, optional, is the runtime's own admission check, run for a new
	// pod after the resource, port and node-selector checks: it returns the
	// reason and message of a refusal, or an empty reason to admit. It runs
	// in the sync loop, so it must not do I/O (the agent's looks up
	// programs on the disk before the update is sent, node/agent).
	Admit func(pod *v1.Pod) (reason, message string)

	SyncPeriod         time.Duration // default 1 s
	HousekeepingPeriod time.Duration // default 2 s
	ResyncInterval     time.Duration // pod resync, default 1 min
	BackOffPeriod      time.Duration // retry after a sync error, default 10 s

	// WorkerRestarts pod actor restarts are allowed within
	// WorkerRestartWindow (default 5 within 1 min); restarts are delayed by
	// WorkerRestartBackoff doubling up to WorkerRestartMaxBackoff (default
	// 100 ms to 10 s). A worker stopped after too many failures is respawned
	// after WorkerRespawnDelay (default 30 s).
	WorkerRestarts          int
	WorkerRestartWindow     time.Duration
	WorkerRestartBackoff    time.Duration
	WorkerRestartMaxBackoff time.Duration
	WorkerRespawnDelay      time.Duration

	Children Children

	// ImageGC, optional, collects unused images when the loop starts and
	// every ImageGCPeriod (default 5 min, the kubelet's), off the loop.
	ImageGC       ImageGC
	ImageGCPeriod time.Duration

	// Recorder, optional, receives the Warning event of an admission
	// rejection (OutOfpods, NodePorts, ...), as the kubelet records one. It
	// must not block.
	Recorder record.EventRecorder

	// PropsOptions are applied to every actor the supervisor spawns (pod
	// actors and the core children): the agent uses them for metrics
	// middleware and instrumented mailboxes.
	PropsOptions []actor.PropsOption
}

// Validate names the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.Runtime == nil:
		return fmt.Errorf("supervisor config: field Runtime is required")
	case c.Cache == nil:
		return fmt.Errorf("supervisor config: field Cache is required")
	case c.MaxPods < 0:
		return fmt.Errorf("supervisor config: field MaxPods must not be negative, got %d", c.MaxPods)
	case c.SyncPeriod < 0 || c.HousekeepingPeriod < 0 || c.ImageGCPeriod < 0:
		return fmt.Errorf("supervisor config: fields SyncPeriod, HousekeepingPeriod and ImageGCPeriod must not be negative")
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if c.MaxPods == 0 {
		c.MaxPods = podrules.DefaultMaxPods
	}
	def(&c.SyncPeriod, time.Second)
	def(&c.HousekeepingPeriod, 2*time.Second)
	def(&c.ImageGCPeriod, 5*time.Minute)
	def(&c.WorkerRestartWindow, time.Minute)
	def(&c.WorkerRestartBackoff, 100*time.Millisecond)
	def(&c.WorkerRestartMaxBackoff, 10*time.Second)
	def(&c.WorkerRespawnDelay, 30*time.Second)
	if c.WorkerRestarts <= 0 {
		c.WorkerRestarts = 5
	}
	return c
}

// podConfig is what pod actors share.
func (c Config) podConfig() podactor.Config {
	return podactor.Config{Runtime: c.Runtime, Cache: c.Cache, Clock: c.Clock, ResyncInterval: c.ResyncInterval, BackOffPeriod: c.BackOffPeriod}
}
