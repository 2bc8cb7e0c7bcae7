package eviction

import (
	"context"
	"errors"
	"fmt"
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
	// LocalStorageCapacityIsolation evicts pods over their local-storage
	// limits (emptyDir sizeLimit, ephemeral-storage limits) every round,
	// as the kubelet's LocalStorageCapacityIsolation; it needs the pods'
	// volume and log usage in Stats.
	LocalStorageCapacityIsolation bool
	// Reclaim, optional, frees node-level resources (what terminated pods
	// left, unused images) before a pod is evicted for a disk signal (the
	// kubelet's reclaimNodeLevelResources); stats are read again after it
	// and no pod is evicted when no threshold is met any more. It runs off
	// the actor's loop.
	Reclaim func(ctx context.Context, terminated []types.UID) (Reclaimed, error)
}

// Reclaimed is what a node-level reclaim removed.
type Reclaimed struct {
	// Pods are the terminated pods whose dead Containers and Sandboxes
	// (and emptyDirs and logs) were removed.
	Pods, Containers, Sandboxes int
	// Images are the unused images removed, ImageBytes their size.
	Images     []string
	ImageBytes uint64
}

// String says what was removed, for the log and the node event.
func (r Reclaimed) String() string {
	return fmt.Sprintf("removed %d dead containers and %d sandboxes of %d terminated pods, and %d unused images (%s)",
		r.Containers, r.Sandboxes, r.Pods, len(r.Images), resourceBytes(r.ImageBytes))
}

// empty reports whether nothing was removed.
func (r Reclaimed) empty() bool { return r.Pods == 0 && len(r.Images) == 0 }

// reclaimTimeout bounds one reclaim (image and container removals).
const reclaimTimeout = 2 * time.Minute

// Node events of the eviction manager (the kubelet's EvictionThresholdMet;
// NodeResourcesReclaimed says what a reclaim removed, FreeDiskSpaceFailed
// what it could not).
const (
	reasonThresholdMet     = "EvictionThresholdMet"
	reasonReclaimed        = "NodeResourcesReclaimed"
	reasonFreeDiskFailed   = "FreeDiskSpaceFailed"
	thresholdMetMessageTpl = "Attempting to reclaim %s"
)

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
	// reclaimDone is a node-level reclaim's outcome and the reading after it.
	reclaimDone struct {
		got   Reclaimed
		err   error
		stats Stats
		read  error
	}
)

// pendingEviction is a round waiting for its reclaim: the pods and the
// reading it ranks them on, and the threshold it acts for.
type pendingEviction struct {
	active []*v1.Pod
	stats  Stats
	obs    map[Signal]observation
	th     Threshold
}

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
	// pending is the round whose reclaim is in flight; roundDue a tick
	// that came meanwhile (its round starts once the reclaim is done).
	pending  *pendingEviction
	roundDue bool
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
		e.decide(ctx, m.Pods, m.Terminated)
	case *reclaimDone:
		e.reclaimDone(ctx, m)
	}
}

// read starts a stats reading in a goroutine, one at a time.
func (e *evictor) read(ctx actor.Context) {
	if e.pending != nil {
		e.roundDue = true
		return
	}
	if e.reading || len(e.cfg.Thresholds) == 0 && !e.cfg.LocalStorageCapacityIsolation {
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
	if len(observe(m.stats)) == 0 && !(e.cfg.LocalStorageCapacityIsolation && len(m.stats.Pods) > 0) {
		e.reading = false
		return
	}
	e.stats = &m.stats
	if ctx.Parent() == nil {
		e.decide(ctx, nil, nil)
		return
	}
	ctx.Request(ctx.Parent(), &messages.GetNodeConditions{})
}

// decide is one round (the kubelet's synchronize): conditions updated,
// pods over their local-storage limits evicted, and while a threshold is
// met past its grace period, node-level resources reclaimed for a disk
// signal and, if that was not enough, one pod evicted.
func (e *evictor) decide(ctx actor.Context, active []*v1.Pod, terminated []types.UID) {
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
	if e.cfg.LocalStorageCapacityIsolation && e.localStorageEviction(ctx, active, stats, now) {
		return
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
	res := signalResource[th.Signal]
	quantity, available := thresholdAmount(th, obs)
	klog.InfoS("Eviction manager: threshold met, attempting to reclaim", "signal", th.Signal, "resourceName", res,
		"threshold", quantity.String(), "available", available.String(), "soft", th.Soft)
	if e.cfg.Recorder != nil {
		e.cfg.Recorder.Eventf(nil, v1.EventTypeWarning, reasonThresholdMet, thresholdMetMessageTpl, res)
	}
	p := &pendingEviction{active: active, stats: stats, obs: obs, th: th}
	if e.cfg.Reclaim != nil && reclaimsNodeLevel(th.Signal, stats.ImageFsDedicated) {
		e.startReclaim(ctx, p, terminated)
		return
	}
	e.evictRanked(ctx, p, now)
}

// reclaimsNodeLevel reports whether node-level resources relieve the
// signal (the kubelet's buildSignalToNodeReclaimFuncs): every disk signal
// when images share the node filesystem, the image filesystem's only when
// it is dedicated.
func reclaimsNodeLevel(sig Signal, dedicated bool) bool {
	switch sig {
	case SignalImageFsAvailable, SignalImageFsInodesFree:
		return true
	case SignalNodeFsAvailable, SignalNodeFsInodesFree:
		return !dedicated
	}
	return false
}

// startReclaim reclaims node-level resources in a goroutine, then reads
// the stats again; the round goes on in reclaimDone (no other round
// starts meanwhile).
func (e *evictor) startReclaim(ctx actor.Context, p *pendingEviction, terminated []types.UID) {
	e.pending, e.reading = p, true
	reclaim, read, life := e.cfg.Reclaim, e.cfg.Stats, e.life
	terminated = slices.Clone(terminated)
	actorutil.Go(actorutil.To(ctx), func() any {
		c, cancel := context.WithTimeout(life, reclaimTimeout)
		got, err := reclaim(c, terminated)
		cancel()
		c, cancel = context.WithTimeout(life, statsTimeout)
		defer cancel()
		s, rerr := read(c)
		return &reclaimDone{got: got, err: err, stats: s, read: rerr}
	})
}

// reclaimDone reports what the reclaim removed and evicts a pod only if a
// threshold is still met on the new reading, minimum reclaim included.
func (e *evictor) reclaimDone(ctx actor.Context, m *reclaimDone) {
	p := e.pending
	e.pending, e.reading = nil, false
	if p == nil || e.life.Err() != nil {
		return
	}
	if e.roundDue {
		e.roundDue = false
		defer e.read(ctx)
	}
	res := signalResource[p.th.Signal]
	if !m.got.empty() {
		klog.InfoS("Eviction manager: reclaimed node-level resources", "resourceName", res, "pods", m.got.Pods,
			"containers", m.got.Containers, "sandboxes", m.got.Sandboxes, "images", m.got.Images, "imageBytes", m.got.ImageBytes)
		if e.cfg.Recorder != nil {
			e.cfg.Recorder.Eventf(nil, v1.EventTypeNormal, reasonReclaimed, "Eviction manager: %s", m.got)
		}
	}
	if m.err != nil {
		klog.InfoS("Eviction manager: unexpected error when attempting to reduce resource pressure", "resourceName", res, "err", m.err)
		if e.cfg.Recorder != nil {
			e.cfg.Recorder.Eventf(nil, v1.EventTypeWarning, reasonFreeDiskFailed, "%v", m.err)
		}
	}
	if m.read != nil {
		klog.ErrorS(m.read, "Eviction manager: cannot read some stats after resource reclaim")
	}
	obs := observe(m.stats)
	if o, ok := obs[p.th.Signal]; ok {
		klog.V(2).InfoS("Eviction manager: observation after resource reclaim", "signal", p.th.Signal, "available", o.available.String(), "capacity", o.capacity.String())
	}
	if _, ok := obs[p.th.Signal]; ok && len(thresholdsMet(e.cfg.Thresholds, obs, true)) == 0 {
		klog.InfoS("Eviction manager: able to reduce resource pressure without evicting pods.", "resourceName", res)
		return
	}
	klog.InfoS("Eviction manager: must evict pod(s) to reclaim", "resourceName", res)
	e.evictRanked(ctx, p, e.cfg.Clock.Now())
}

// evictRanked evicts the first pod of the round's ranking for its
// threshold.
func (e *evictor) evictRanked(ctx actor.Context, p *pendingEviction, now time.Time) {
	th := p.th
	var candidates []*v1.Pod
	for _, pod := range p.active {
		if !e.evicted[pod.UID] && !critical(pod) {
			candidates = append(candidates, pod)
		}
	}
	if len(candidates) == 0 {
		klog.InfoS("Eviction manager: no pod to evict", "signal", th.Signal)
		return
	}
	rank(th.Signal, candidates, p.stats.Pods, p.stats.ImageFsDedicated)
	pod := candidates[0]
	msg := evictionMessage(th, p.obs, pod, p.stats.Pods)
	grace := immediateGracePeriod
	if th.Soft {
		grace = e.cfg.MaxPodGracePeriodSeconds
	}
	klog.InfoS("Evicting pod", "pod", klog.KObj(pod), "podUID", pod.UID, "signal", th.Signal, "message", msg)
	e.evict(ctx, pod, msg, grace, []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue,
		Reason: v1.PodReasonTerminationByKubelet, Message: msg}}, now)
}

// localStorageEviction evicts every pod over one of its local-storage
// limits (the kubelet's localStorageEviction), and reports whether it
// evicted any: the round ends there, as the kubelet's.
func (e *evictor) localStorageEviction(ctx actor.Context, active []*v1.Pod, stats Stats, now time.Time) bool {
	evicted := false
	for _, pod := range active {
		if e.evicted[pod.UID] {
			continue
		}
		ps, ok := stats.Pods[pod.UID]
		if !ok {
			continue
		}
		msg := localStorageViolation(pod, ps, stats.ImageFsDedicated)
		if msg == "" {
			continue
		}
		if critical(pod) {
			klog.ErrorS(nil, "Eviction manager: cannot evict a critical pod", "pod", klog.KObj(pod), "message", msg)
			continue
		}
		klog.InfoS("Evicting pod over its local storage limit", "pod", klog.KObj(pod), "podUID", pod.UID, "message", msg)
		e.evict(ctx, pod, msg, immediateGracePeriod, nil, now)
		evicted = true
	}
	return evicted
}

// evict asks the supervisor to evict the pod with the kubelet's status
// and records the Warning event.
func (e *evictor) evict(ctx actor.Context, pod *v1.Pod, msg string, grace int64, conditions []v1.PodCondition, now time.Time) {
	opts := messages.KillOptions{Evict: true, GracePeriodSecondsOverride: &grace, Reason: Reason, Message: msg, Conditions: conditions}
	e.evicted[pod.UID] = true
	e.lastEvicted, e.lastEvictedUntil = pod.UID, now.Add(podCleanupTimeout)
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
