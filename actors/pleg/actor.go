package pleg

import (
	"context"
	"time"

	"github.com/actorlet/actorlet/actors/actorutil"
	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages"
	"github.com/asynkron/protoactor-go/actor"
	"k8s.io/klog/v2"
)

// tick is the relist period elapsing.
type tick struct{}

// Props returns the props of a PLEG actor, or the error naming what is
// wrong with cfg.
func Props(cfg Config) (*actor.Props, error) {
	full, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return actor.PropsFromProducer(func() actor.Actor { return newPLEGActor(full) }), nil
}

// Validate reports what is wrong with cfg, naming the field.
func (c Config) Validate() error {
	_, err := c.withDefaults()
	return err
}

// plegActor relists the runtime and follows its container event stream.
// Its two behaviours are the two modes: relisting (every RelistPeriod) and
// evented (the stream works; relist every EventedRelistPeriod).
type plegActor struct {
	cfg      Config
	relister relister
	behavior actor.Behavior

	root   *actor.RootContext
	self   *actor.PID
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	state           relistState // owned by the relist goroutine while relisting
	relistRunning   bool
	lastRelistStart time.Time // when the running or last relist was started
	prevRelistStart time.Time // start of the last finished relist
	lastSuccess     time.Time
	relistHealthy   bool

	statusRunning  bool
	lastStatusPoll time.Time // when the running or last status poll started
	runtimeReady   *bool

	streamGen      int
	streamCancel   context.CancelFunc
	streamDisabled bool // the runtime answered Unimplemented
	streamBackoff  time.Duration
	loggedNoStream bool
	// cancelStreamRetry cancels the scheduled reopening of the stream.
	cancelStreamRetry func()
}

func newPLEGActor(cfg Config) *plegActor {
	p := &plegActor{
		cfg:           cfg,
		relister:      relister{runtime: cfg.Runtime, cache: cfg.Cache, clock: cfg.Clock},
		behavior:      actor.NewBehavior(),
		state:         newRelistState(),
		relistHealthy: true,
		streamBackoff: streamBackoffInitial,
	}
	p.behavior.Become(p.relisting)
	return p
}

// Receive dispatches to the current mode.
func (p *plegActor) Receive(ctx actor.Context) { p.behavior.Receive(ctx) }

// relisting is the mode while no container event stream works.
func (p *plegActor) relisting(ctx actor.Context) {
	if _, ok := ctx.Message().(tick); ok {
		p.onTick(ctx, p.cfg.RelistPeriod)
		return
	}
	p.common(ctx)
}

// evented is the mode while the container event stream works.
func (p *plegActor) evented(ctx actor.Context) {
	if _, ok := ctx.Message().(tick); ok {
		p.onTick(ctx, p.cfg.EventedRelistPeriod)
		return
	}
	p.common(ctx)
}

func (p *plegActor) common(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		p.start(ctx)
	case *actor.Stopping, *actor.Restarting:
		p.stop()
	case relistDone:
		p.onRelistDone(ctx, msg)
	case runtimeStatusDone:
		p.onRuntimeStatus(ctx, msg)
	case streamEstablished:
		if msg.gen == p.streamGen {
			klog.InfoS("Container event stream established, switching to evented PLEG", "relistPeriod", p.cfg.EventedRelistPeriod)
			p.streamBackoff = streamBackoffInitial
			p.behavior.Become(p.evented)
		}
	case streamEnded:
		p.onStreamEnded(ctx, msg)
	case streamRetry:
		if msg.gen == p.streamGen && !p.streamDisabled {
			p.startStream()
		}
	case containerEventsObserved:
		for i := range msg.events {
			p.report(ctx, &msg.events[i])
		}
	}
}

func (p *plegActor) start(ctx actor.Context) {
	p.root = ctx.ActorSystem().Root
	p.self = ctx.Self()
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.done = make(chan struct{})
	p.lastSuccess = p.cfg.Clock.Now()

	actorutil.Tick(p.cfg.Clock, p.cfg.RelistPeriod, p.send, tick{}, p.done)
	p.startRelist()
	p.startRuntimeStatus()
	p.startStream()
}

func (p *plegActor) stop() {
	if p.cancel == nil {
		return
	}
	p.cancel()
	p.stopStreamRetry()
	close(p.done)
	p.cancel = nil
}

// send delivers a message from a goroutine to the actor unless it stopped.
func (p *plegActor) send(msg interface{}) {
	select {
	case <-p.done:
		return
	default:
	}
	p.root.Send(p.self, msg)
}

// onTick checks health, polls the runtime and relists when one is due: at
// every tick while relisting, once per period (give or take half a tick, as
// ticks and relist starts do not line up exactly) while evented.
func (p *plegActor) onTick(ctx actor.Context, period time.Duration) {
	p.checkHealth(ctx)
	if due(p.cfg.Clock.Since(p.lastStatusPoll), p.cfg.RuntimeStatusPeriod, p.cfg.RelistPeriod) {
		p.startRuntimeStatus()
	}
	if due(p.cfg.Clock.Since(p.lastRelistStart), period, p.cfg.RelistPeriod) {
		p.startRelist()
	}
}

// due reports whether a task of the given period, last started since ago,
// is due at a tick of tick: give or take half a tick, as ticks and starts
// do not line up exactly; at every tick when the period is not longer.
func due(since, period, tick time.Duration) bool {
	// since-side addition could overflow: since is the clock's distance
	// from a zero time before the first start (about 2,000 years, capped).
	return period <= tick || since >= period-tick/2
}

// startRelist runs a relist in a goroutine unless one is already running.
func (p *plegActor) startRelist() {
	if p.relistRunning {
		return
	}
	p.relistRunning = true
	prev := p.state
	p.state = relistState{}
	p.lastRelistStart = p.cfg.Clock.Now()
	actorutil.Go(p.send, func() any {
		ctx, cancel := context.WithTimeout(p.ctx, p.cfg.relistTimeout())
		defer cancel()
		return p.relister.relist(ctx, prev)
	})
}

func (p *plegActor) onRelistDone(ctx actor.Context, d relistDone) {
	p.relistRunning = false
	p.state = d.state
	if obs := p.cfg.Observer; obs != nil {
		var interval time.Duration
		if !p.prevRelistStart.IsZero() {
			interval = d.start.Sub(p.prevRelistStart)
		}
		obs(RelistObservation{Duration: d.duration, Interval: interval, Events: len(d.events), Err: d.err})
	}
	p.prevRelistStart = d.start
	if d.err != nil {
		klog.ErrorS(d.err, "PLEG relist failed")
	} else {
		p.lastSuccess = d.start
		for i := range d.events {
			ev := &d.events[i]
			klog.V(4).InfoS("PLEG event", "podUID", ev.PodUID, "type", ev.Type, "containerID", ev.ContainerID)
			p.report(ctx, ev)
		}
	}
	p.checkHealth(ctx)
}

// checkHealth reports a flip of relist health to the parent.
func (p *plegActor) checkHealth(ctx actor.Context) {
	h := relistHealth(p.cfg.Clock.Now(), p.lastSuccess, p.cfg.RelistThreshold)
	if h.Healthy == p.relistHealthy {
		return
	}
	p.relistHealthy = h.Healthy
	if h.Healthy {
		klog.InfoS("PLEG is healthy again", "lastRelist", h.LastRelist)
	} else {
		klog.InfoS("PLEG is not healthy", "lastRelist", h.LastRelist, "threshold", p.cfg.RelistThreshold)
	}
	p.tell(ctx, &h)
}

// startRuntimeStatus polls CRI Status in a goroutine unless a poll runs.
func (p *plegActor) startRuntimeStatus() {
	if p.statusRunning {
		return
	}
	p.statusRunning = true
	p.lastStatusPoll = p.cfg.Clock.Now()
	actorutil.Go(p.send, func() any {
		ctx, cancel := context.WithTimeout(p.ctx, p.cfg.relistTimeout())
		defer cancel()
		return pollRuntimeStatus(ctx, p.cfg.CRI)
	})
}

// onRuntimeStatus reports the first readiness seen and every change.
func (p *plegActor) onRuntimeStatus(ctx actor.Context, s runtimeStatusDone) {
	p.statusRunning = false
	if p.runtimeReady != nil && *p.runtimeReady == s.ready {
		return
	}
	ready := s.ready
	p.runtimeReady = &ready
	if ready {
		klog.InfoS("Container runtime is ready")
	} else {
		klog.InfoS("Container runtime is not ready", "reason", s.message)
	}
	p.tell(ctx, &messages.RuntimeHealthChanged{Ready: s.ready, Message: s.message})
}

// startStream opens a new container event stream in a goroutine.
func (p *plegActor) startStream() {
	if p.streamDisabled {
		return
	}
	if p.streamCancel != nil {
		p.streamCancel()
	}
	p.streamGen++
	ctx, cancel := context.WithCancel(p.ctx)
	p.streamCancel = cancel
	go p.watchEvents(ctx, p.streamGen)
}

// onStreamEnded falls back to relisting and, unless the runtime lacks the
// feature, schedules another attempt with back-off.
func (p *plegActor) onStreamEnded(ctx actor.Context, e streamEnded) {
	if e.gen != p.streamGen {
		return
	}
	p.streamCancel()
	p.streamCancel = nil
	wasEvented := e.established
	p.behavior.Become(p.relisting)

	switch {
	case cri.IsUnimplemented(e.err):
		p.streamDisabled = true
		klog.InfoS("Container runtime does not stream container events, staying on relisting", "relistPeriod", p.cfg.RelistPeriod)
		if wasEvented {
			p.startRelist()
		}
		return
	case wasEvented:
		klog.InfoS("Container event stream broke, falling back to relisting", "err", e.err, "relistPeriod", p.cfg.RelistPeriod)
		p.streamBackoff = streamBackoffInitial
		p.startRelist()
	case !p.loggedNoStream:
		p.loggedNoStream = true
		klog.InfoS("Container event stream could not be established, relisting meanwhile", "err", e.err, "retryIn", p.streamBackoff)
	default:
		klog.V(4).InfoS("Container event stream could not be established", "err", e.err, "retryIn", p.streamBackoff)
	}
	p.scheduleStreamRetry()
}

// scheduleStreamRetry reopens the stream after the current back-off, which
// then doubles up to its cap.
func (p *plegActor) scheduleStreamRetry() {
	gen, wait := p.streamGen, p.streamBackoff
	p.streamBackoff *= 2
	if p.streamBackoff > streamBackoffMax {
		p.streamBackoff = streamBackoffMax
	}
	p.stopStreamRetry()
	p.cancelStreamRetry = actorutil.After(p.cfg.Clock, wait, func() { p.send(streamRetry{gen: gen}) })
}

// stopStreamRetry cancels a scheduled reopening of the stream, if any.
func (p *plegActor) stopStreamRetry() {
	if p.cancelStreamRetry != nil {
		p.cancelStreamRetry()
		p.cancelStreamRetry = nil
	}
}

// report passes a lifecycle event to the EventObserver and the parent.
func (p *plegActor) report(ctx actor.Context, ev *messages.PodLifecycleEvent) {
	if obs := p.cfg.EventObserver; obs != nil {
		obs(*ev)
	}
	p.tell(ctx, ev)
}

// tell sends a fact to the parent (the supervisor). Facts go as pointers,
// as the supervisor receives every message.
func (p *plegActor) tell(ctx actor.Context, msg interface{}) {
	if parent := ctx.Parent(); parent != nil {
		ctx.Send(parent, msg)
	}
}
