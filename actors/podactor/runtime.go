package podactor

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/actorlet/actorlet/cri"
)

// Runtime is what a pod actor needs from the runtime manager
// (cri/kuberuntime.Manager behind a small adapter). Every call must honour
// ctx: a canceled context stops the call promptly.
type Runtime interface {
	// SyncPod brings the pod's containers towards the spec given the runtime
	// status; probes holds, by container ID, liveness or startup failures
	// (those containers are restarted) and startup successes (a sidecar
	// with a startup probe holds back the next container until then). It
	// returns nil when every action succeeded.
	SyncPod(ctx context.Context, pod *v1.Pod, status *cri.PodStatus, probes cri.Probes) error
	// KillPod stops every container and sandbox of running. pod is nil for
	// an orphan. gracePeriodOverride, when set, is the grace period to use.
	KillPod(ctx context.Context, pod *v1.Pod, running *cri.Pod, gracePeriodOverride *int64) error
	// RestartContainer stops one container instance at an operator's request
	// and clears its crash back-off: the next sync starts a fresh instance at
	// once (an operator's restart is not a crash).
	RestartContainer(ctx context.Context, pod *v1.Pod, containerID, containerName string) error
	// ConvertPodStatus reads the runtime's part of pod's API status from the
	// runtime status: container statuses, IPs, start time, and whether the
	// sandbox is ready; no phase, no condition.
	ConvertPodStatus(pod *v1.Pod, status *cri.PodStatus) cri.APIPodStatus
	// GetPodStatus reads the pod's status from the runtime now (after a
	// sync that changed it, instead of waiting for PLEG's next relist).
	GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*cri.PodStatus, error)
}

// Cache is the PLEG's pod status cache.
type Cache interface {
	// GetNewerThan blocks until the cache holds a status of the pod newer
	// than minTime, or ctx ends.
	GetNewerThan(ctx context.Context, uid types.UID, minTime time.Time) (*cri.PodStatus, error)
	// Get returns the latest cached status without waiting.
	Get(uid types.UID) (*cri.PodStatus, error)
	// Observed records a status a sync read itself from the runtime at ts
	// (after its own changes), so PLEG need not read it again for them.
	Observed(uid types.UID, status *cri.PodStatus, ts time.Time)
}

// Config is what every pod actor shares.
type Config struct {
	Runtime Runtime
	Cache   Cache
	Clock   clock.Clock
	// ResyncInterval is the periodic resync of a healthy pod (default 1 min).
	ResyncInterval time.Duration
	// BackOffPeriod is the retry interval after an error (default 10 s).
	BackOffPeriod time.Duration
}

// withDefaults fills unset fields.
func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.ResyncInterval <= 0 {
		c.ResyncInterval = time.Minute
	}
	if c.BackOffPeriod <= 0 {
		c.BackOffPeriod = 10 * time.Second
	}
	return c
}

// validate names the first missing dependency.
func (c Config) validate() error {
	switch {
	case c.Runtime == nil:
		return errMissing("Runtime")
	case c.Cache == nil:
		return errMissing("Cache")
	}
	return nil
}

type errMissing string

func (e errMissing) Error() string { return "podactor config: field " + string(e) + " is required" }
