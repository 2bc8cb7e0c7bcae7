package pleg

import (
	"errors"
	"fmt"
	"time"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages"
	"k8s.io/utils/clock"
)

// Defaults, as the kubelet's.
const (
	DefaultRelistPeriod        = time.Second
	DefaultRelistThreshold     = 3 * time.Minute
	DefaultEventedRelistPeriod = 30 * time.Second
	// DefaultRuntimeStatusPeriod is how often the runtime's readiness is
	// polled (CRI Status), as the kubelet's runtime check every 5 s.
	DefaultRuntimeStatusPeriod = 5 * time.Second

	// Back-off between attempts to (re)open the container event stream.
	streamBackoffInitial = time.Second
	streamBackoffMax     = 5 * time.Minute
	// relistTimeout bounds one relist's runtime calls.
	relistTimeoutMin = 10 * time.Second
)

// Config is what the PLEG actor needs.
type Config struct {
	// Runtime lists pods and inspects their status (the runtime manager).
	Runtime Runtime
	// CRI streams container events and answers Status.
	CRI cri.RuntimeService
	// Cache receives every pod status PLEG inspects.
	Cache *Cache
	// Clock drives relist ticks, health and back-off; nil means real time.
	Clock clock.WithTicker
	// RelistPeriod is the relist interval; sub-second values are allowed.
	RelistPeriod time.Duration
	// RelistThreshold is how long without a successful relist before PLEG
	// reports itself unhealthy.
	RelistThreshold time.Duration
	// EventedRelistPeriod is the safety-net relist interval while the
	// container event stream works.
	EventedRelistPeriod time.Duration
	// RuntimeStatusPeriod is how often the runtime's readiness is polled
	// (at ticks of RelistPeriod).
	RuntimeStatusPeriod time.Duration
	// NodeName, when set, is the node whose pods this PLEG follows: a
	// container event of a sandbox not labelled with it (another agent
	// sharing the runtime, pods created by other CRI clients) is ignored,
	// as relists only list this node's pods (kuberuntime.Options.NodeName).
	NodeName string
	// Observer, when set, is called after every relist (for metrics). It must
	// not block.
	Observer func(RelistObservation)
	// EventObserver, when set, sees every lifecycle event the PLEG reports,
	// before the supervisor does (the container log manager learns of
	// started and dead containers from it). It must not block.
	EventObserver func(messages.PodLifecycleEvent)
}

// RelistObservation describes one finished relist.
type RelistObservation struct {
	// Duration is how long the relist took.
	Duration time.Duration
	// Interval is the time since the previous relist started (zero for the
	// first one).
	Interval time.Duration
	// Events is how many lifecycle events the relist produced.
	Events int
	// Err is why the relist failed, nil on success.
	Err error
}

// withDefaults validates the config and fills in defaults.
func (c Config) withDefaults() (Config, error) {
	var errs []error
	if c.Runtime == nil {
		errs = append(errs, errors.New("pleg config: Runtime is required"))
	}
	if c.CRI == nil {
		errs = append(errs, errors.New("pleg config: CRI is required"))
	}
	if c.Cache == nil {
		errs = append(errs, errors.New("pleg config: Cache is required"))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"RelistPeriod", c.RelistPeriod},
		{"RelistThreshold", c.RelistThreshold},
		{"EventedRelistPeriod", c.EventedRelistPeriod},
		{"RuntimeStatusPeriod", c.RuntimeStatusPeriod},
	} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("pleg config: %s must not be negative, got %s", d.name, d.v))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.RelistPeriod == 0 {
		c.RelistPeriod = DefaultRelistPeriod
	}
	if c.RelistThreshold == 0 {
		c.RelistThreshold = DefaultRelistThreshold
	}
	if c.EventedRelistPeriod == 0 {
		c.EventedRelistPeriod = DefaultEventedRelistPeriod
	}
	if c.RuntimeStatusPeriod == 0 {
		c.RuntimeStatusPeriod = DefaultRuntimeStatusPeriod
	}
	if c.EventedRelistPeriod < c.RelistPeriod {
		c.EventedRelistPeriod = c.RelistPeriod
	}
	return c, nil
}

// relistTimeout bounds one relist: long enough for a slow runtime, short
// enough that a hung call cannot stall relisting forever.
func (c Config) relistTimeout() time.Duration {
	if t := 10 * c.RelistPeriod; t > relistTimeoutMin {
		return t
	}
	return relistTimeoutMin
}
