package eviction

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/actorlet/actorlet/actors/actorutil"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/record"
)

// immediateGracePeriod is the grace period of a pod evicted for a hard
// threshold (the kubelet's immediateEvictionGracePeriodSeconds).
const immediateGracePeriod int64 = 1

// statsTimeout bounds one stats reading.
const statsTimeout = 30 * time.Second

// podCleanupTimeout is how long no other pod is evicted while the last
// one evicted is still going (the kubelet's waitForPodsCleanup): its
// memory is not free until its containers are gone.
const podCleanupTimeout = 30 * time.Second

// Config configures the eviction actor.
type Config struct {
	// Thresholds are the hard and soft thresholds (ParseThresholds).
	Thresholds []Threshold
	// MaxPodGracePeriodSeconds is the longest grace period of a pod evicted
	// for a soft threshold (--eviction-max-pod-grace-period, default 0 as
	// the kubelet's; the pod's own when shorter).
	MaxPodGracePeriodSeconds int64
	// PressureTransitionPeriod holds a condition after its last threshold
	// is no longer met (default 5m).
	PressureTransitionPeriod time.Duration
	// MonitoringInterval is how often stats are read (default 10s).
	MonitoringInterval time.Duration
	// Stats reads the node and its pods; it runs off the actor's loop.
	Stats func(ctx context.Context) (Stats, error)
	// Clock (default the real one) runs the rounds and their grace periods.
	Clock clock.WithTicker
	// Recorder, optional, receives each evicted pod's Warning event.
	Recorder record.EventRecorder
	// NoMemoryNotifications turns off the cgroup v1 memory threshold
	// notifications (armed when the stats name a memory cgroup).
	NoMemoryNotifications bool
}

// Validate names what is wrong with cfg.
func (c Config) Validate() error {
	switch {
	case c.Stats == nil:
		return errors.New("eviction: Stats is required")
	case c.MaxPodGracePeriodSeconds < 0:
		return errors.New("eviction: --eviction-max-pod-grace-period must not be negative")
	case c.PressureTransitionPeriod < 0:
		return errors.New("eviction: --eviction-pressure-transition-period must not be negative")
	case c.MonitoringInterval < 0:
		return errors.New("eviction: --eviction-monitoring-interval must not be negative")
	}
	return nil
}

// Props returns the eviction actor's props. It runs as a child of the
// supervisor: it asks its parent for the active pods (GetNodeConditions),
// tells it NodePressureChanged and TerminatePod.
func Props(cfg Config) (*actor.Props, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.PressureTransitionPeriod == 0 {
		cfg.PressureTransitionPeriod = DefaultPressureTransitionPeriod
	}
	if cfg.MonitoringInterval == 0 {
		cfg.MonitoringInterval = DefaultMonitoringInterval
	}
	return actor.PropsFromProducer(func() actor.Actor {
		return &evictor{cfg: cfg, track: newTracker(cfg.Thresholds, cfg.PressureTransitionPeriod), evicted: map[types.UID]bool{}}
	}), nil
}

type (
	// tick starts a round.
	tick struct{}
	// statsRead is a round's reading.
	statsRead struct {
		stats Stats
		err   error
	}
	// notifierArmed is a memory threshold notifier registered (or not).
	notifierArmed struct {
		n   *memoryNotifier
		err error
	}
)

type evictor struct {
	cfg        Config
	track      *tracker
	stop       chan struct{}
	life       context.Context
	endLife    context.CancelFunc
	reading    bool   // a stats reading or pod query is in flight
	stats      *Stats // the reading waiting for the active pods
	conditions []v1.NodeConditionType
	// evicted are the pods already asked to go: not picked again.
	evicted map[types.UID]bool
	// lastEvicted is the pod evicted last, and until when no other is
	// evicted while it is still active.
	lastEvicted      types.UID
	lastEvictedUntil time.Time
	// notifier is the memory threshold armed; arming is one in flight;
	// notifyOff stops arming after a failure (logged once).
	notifier  *memoryNotifier
	arming    bool
	notifyOff bool
}

func (e *evictor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		e.stop = make(chan struct{})
		e.life, e.endLife = context.WithCancel(context.Background())
		klog.InfoS("Eviction manager started", "thresholds", len(e.cfg.Thresholds), "monitoringInterval", e.cfg.MonitoringInterval)
		actorutil.Tick(e.cfg.Clock, e.cfg.MonitoringInterval, actorutil.To(ctx), &tick{}, e.stop)
		ctx.Send(ctx.Self(), &tick{})
	case *actor.Stopping, *actor.Restarting:
		if e.stop != nil {
			close(e.stop)
			e.stop = nil
			e.endLife()
		}
		if e.notifier != nil {
			e.notifier.close()
			e.notifier = nil
		}
		e.notifyOff = true
	case *notifierArmed:
		e.notifierArmed(ctx, m)
	case *tick:
		e.read(ctx)
	case *statsRead:
		e.statsRead(ctx, m)
	case *messages.NodeConditions:
		e.decide(ctx, m.Pods)
	}
}

// read starts a stats reading in a goroutine, one at a time.
func (e *evictor) read(ctx actor.Context) {
	if e.reading || len(e.cfg.Thresholds) == 0 {
		return
	}
	e.reading = true
	read, life := e.cfg.Stats, e.life
	actorutil.Go(actorutil.To(ctx), func() any {
		c, cancel := context.WithTimeout(life, statsTimeout)
		defer cancel()
		s, err := read(c)
		return &statsRead{stats: s, err: err}
	})
}

// statsRead asks the supervisor for its active pods once stats are in.
func (e *evictor) statsRead(ctx actor.Context, m *statsRead) {
	if m.err != nil && e.life.Err() == nil {
		// What was read still counts: a signal that cannot be read is
		// left out, the others are acted on.
		klog.ErrorS(m.err, "Eviction manager: cannot read some stats")
	}
	if len(observe(m.stats)) == 0 {
		e.reading = false
		return
	}
	e.stats = &m.stats
	if ctx.Parent() == nil {
		e.decide(ctx, nil)
		return
	}
	ctx.Request(ctx.Parent(), &messages.GetNodeConditions{})
}

// decide is one round (the kubelet's synchronize): conditions updated,
// and while a threshold is met past its grace period, one pod evicted.
func (e *evictor) decide(ctx actor.Context, active []*v1.Pod) {
	if e.stats == nil {
		return
	}
	stats := *e.stats
	e.stats, e.reading = nil, false
	e.armNotifier(ctx, stats)
	now := e.cfg.Clock.Now()
	obs := observe(stats)
	r := e.track.update(now, obs)
	if !slices.Equal(r.conditions, e.conditions) {
		klog.InfoS("Node pressure conditions changed", "conditions", r.conditions, "was", e.conditions)
		e.conditions = r.conditions
		if ctx.Parent() != nil {
			ctx.Send(ctx.Parent(), &messages.NodePressureChanged{Conditions: slices.Clone(r.conditions)})
		}
	}
	live := map[types.UID]bool{}
	for _, p := range active {
		live[p.UID] = true
	}
	for uid := range e.evicted {
		if !live[uid] {
			delete(e.evicted, uid)
		}
	}
	if len(r.act) == 0 {
		return
	}
	if e.lastEvicted != "" && live[e.lastEvicted] && now.Before(e.lastEvictedUntil) {
		klog.V(2).InfoS("Eviction manager: waiting for the evicted pod to be cleaned up", "podUID", e.lastEvicted)
		return
	}
	e.lastEvicted = ""
	th := r.act[0]
	quantity, available := thresholdAmount(th, obs)
	klog.InfoS("Eviction manager: threshold met, attempting to reclaim", "signal", th.Signal, "threshold", quantity.String(), "available", available.String(), "soft", th.Soft)
	var candidates []*v1.Pod
	for _, p := range active {
		if !e.evicted[p.UID] && !critical(p) {
			candidates = append(candidates, p)
		}
	}
	if len(candidates) == 0 {
		klog.InfoS("Eviction manager: no pod to evict", "signal", th.Signal)
		return
	}
	rank(th.Signal, candidates, stats.Pods)
	pod := candidates[0]
	msg := evictionMessage(th, obs, pod, stats.Pods)
	grace := immediateGracePeriod
	if th.Soft {
		grace = e.cfg.MaxPodGracePeriodSeconds
	}
	opts := messages.KillOptions{Evict: true, GracePeriodSecondsOverride: &grace, Reason: Reason, Message: msg,
		Conditions: []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue,
			Reason: v1.PodReasonTerminationByKubelet, Message: msg}}}
	e.evicted[pod.UID] = true
	e.lastEvicted, e.lastEvictedUntil = pod.UID, now.Add(podCleanupTimeout)
	klog.InfoS("Evicting pod", "pod", klog.KObj(pod), "podUID", pod.UID, "signal", th.Signal, "message", msg)
	if e.cfg.Recorder != nil {
		e.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, Reason, "%s", msg)
	}
	if ctx.Parent() != nil {
		ctx.Send(ctx.Parent(), &messages.TerminatePod{UID: pod.UID, Options: opts})
	}
}

// armNotifier (re)registers the memory threshold notifier when the
// threshold's usage moved by more than 1% (the inactive file pages move
// it), in a goroutine: registering writes to the cgroup filesystem.
func (e *evictor) armNotifier(ctx actor.Context, s Stats) {
	if e.cfg.NoMemoryNotifications || e.notifyOff || e.arming || s.MemoryCgroupDir == "" {
		return
	}
	var th *Threshold
	for i := range e.cfg.Thresholds {
		t := &e.cfg.Thresholds[i]
		if t.Signal == SignalMemoryAvailable && (th == nil || th.Soft && !t.Soft) {
			th = t
		}
	}
	if th == nil {
		return
	}
	want := memoryThresholdUsage(*th, s)
	if want == 0 {
		return
	}
	if n := e.notifier; n != nil {
		diff := max(n.threshold, want) - min(n.threshold, want)
		if diff <= want/100 {
			return
		}
	}
	e.arming = true
	dir := s.MemoryCgroupDir
	actorutil.Go(actorutil.To(ctx), func() any {
		n, err := armMemoryNotifier(dir, want)
		return &notifierArmed{n: n, err: err}
	})
}

// notifierArmed swaps the new notifier in and starts waiting on it; a
// failure (cgroup v2, no write access) turns notifications off.
func (e *evictor) notifierArmed(ctx actor.Context, m *notifierArmed) {
	e.arming = false
	if m.err != nil {
		e.notifyOff = true
		klog.InfoS("Eviction manager: memory pressure notifications off, stats are read every interval", "reason", m.err.Error())
		return
	}
	if e.notifyOff { // stopped meanwhile
		m.n.close()
		return
	}
	if e.notifier != nil {
		e.notifier.close()
	}
	e.notifier = m.n
	klog.V(2).InfoS("Eviction manager: memory threshold notifier armed", "usageBytes", m.n.threshold)
	send := actorutil.To(ctx)
	go m.n.wait(func() { send(&tick{}) })
}
