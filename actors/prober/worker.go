package prober

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/actorlet/actorlet/actors/actorutil"
	"github.com/actorlet/actorlet/actors/prober/probe"
	"github.com/actorlet/actorlet/messages"
	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// worker probes one container for one kind. It never blocks Receive: the
// probe runs in a goroutine and reports back with probeDone.
type worker struct {
	cfg       Config
	key       workerKey
	spec      probeSpec
	container *v1.Container
	manager   *actor.PID
	behavior  actor.Behavior

	target targetUpdate

	result       messages.ProbeResult // committed result for target.containerID
	reportedID   string               // last (container ID, result) reported
	reportedRes  messages.ProbeResult
	reportedOnce bool
	lastResult   messages.ProbeResult // latest raw outcome and its run length
	run          int
	lastProbe    time.Time
	message      string

	seq      int
	inFlight bool
	ctx      context.Context
	cancel   context.CancelFunc
	stopTick chan struct{}
}

func workerProps(cfg Config, key workerKey, spec probeSpec, container *v1.Container) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor {
		w := &worker{cfg: cfg, key: key, spec: spec, container: container, result: initialResult(key.kind)}
		w.behavior = actor.NewBehavior()
		w.behavior.Become(w.active)
		return w
	})
}

var _ actor.Actor = &worker{}

// Receive handles lifecycle here and hands everything else to the current
// behaviour.
func (w *worker) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		w.start(ctx)
		return
	case *actor.Stopping, *actor.Restarting:
		w.stop()
		return
	}
	w.behavior.Receive(ctx)
}

// active probes on every tick the gates allow.
func (w *worker) active(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *targetUpdate:
		w.applyTarget(ctx, msg)
	case *tick:
		w.maybeProbe(ctx)
	case *probeDone:
		w.record(ctx, msg)
	}
}

// holding waits for a new container instance after a liveness or startup
// failure (the container is about to be restarted) or after a startup
// success (the startup probe's work is done).
func (w *worker) holding(ctx actor.Context) {
	if msg, ok := ctx.Message().(*targetUpdate); ok {
		w.applyTarget(ctx, msg)
	}
}

func (w *worker) start(ctx actor.Context) {
	w.manager = ctx.Parent()
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.stopTick = make(chan struct{})
	actorutil.Tick(w.cfg.Clock, w.spec.period, actorutil.To(ctx), &tick{}, w.stopTick)
}

func (w *worker) stop() {
	if w.cancel != nil {
		w.cancel()
	}
	if w.stopTick != nil {
		close(w.stopTick)
		w.stopTick = nil
	}
}

// applyTarget takes the container's latest view. A new container ID resets
// the worker to the initial result and leaves holding.
func (w *worker) applyTarget(ctx actor.Context, t *targetUpdate) {
	prev := w.target
	if t.containerID == "" {
		// No instance yet (or it was removed): keep the one we know.
		t.containerID, t.running = prev.containerID, false
	}
	w.target = *t
	if t.containerID != prev.containerID {
		klog.V(4).InfoS("Probe worker sees a new container", "worker", w.key.String(), "containerID", t.containerID)
		w.seq++ // drop results of the old instance still in flight
		w.inFlight = false
		w.lastResult, w.run, w.message = messages.ProbeUnknown, 0, ""
		w.commit(ctx, initialResult(w.key.kind), "")
		w.behavior.Become(w.active)
		w.maybeProbe(ctx)
		return
	}
	switch {
	case !t.running:
		// Outcomes before the container stopped do not count towards
		// thresholds once it runs again.
		w.lastResult, w.run = messages.ProbeUnknown, 0
		if w.key.kind == messages.Readiness {
			w.commit(ctx, messages.ProbeFailure, "container is not running")
		}
	case t.pod != nil && t.pod.DeletionTimestamp != nil && w.key.kind != messages.Readiness:
		// A terminating pod is not restarted for failing liveness.
		w.commit(ctx, messages.ProbeSuccess, "")
	case t.started && !prev.started, t.running && !prev.running:
		w.maybeProbe(ctx)
	}
	w.report(ctx, nil)
}

// maybeProbe starts a probe when none is in flight and every gate is open.
func (w *worker) maybeProbe(ctx actor.Context) {
	t := w.target
	switch {
	case w.inFlight, t.containerID == "":
		return
	case !t.running:
		if w.key.kind == messages.Readiness {
			w.commit(ctx, messages.ProbeFailure, "container is not running")
			w.report(ctx, nil)
		}
		return
	case t.pod != nil && t.pod.DeletionTimestamp != nil && w.key.kind != messages.Readiness:
		return
	case w.key.kind != messages.Startup && !t.started:
		return
	case !t.startedAt.IsZero() && w.cfg.Clock.Since(t.startedAt) < w.spec.initialDelay:
		return
	}
	w.inFlight = true
	w.seq++
	seq, id, clk := w.seq, t.containerID, w.cfg.Clock
	target := probe.Target{
		Handler:     w.spec.handler,
		Timeout:     w.spec.timeout,
		PodIP:       t.podIP,
		Container:   w.container,
		ContainerID: runtimeID(id),
		Exec:        w.cfg.Exec,
	}
	pctx, redact, pod := w.ctx, w.cfg.Redact, w.target.pod
	actorutil.Go(actorutil.To(ctx), func() any {
		res, msg, err := probe.Run(pctx, target)
		if redact != nil {
			// An exec probe's output is whatever the command printed,
			// $PASSWORD included.
			msg = redact(pod, msg)
			if err != nil {
				if r := redact(pod, err.Error()); r != err.Error() {
					err = errors.New(r)
				}
			}
		}
		return &probeDone{seq: seq, containerID: id, result: res, message: msg, err: err, at: clk.Now()}
	})
}

// record counts a probe outcome against the thresholds and commits the
// result once the run is long enough.
func (w *worker) record(ctx actor.Context, d *probeDone) {
	if d.seq != w.seq || d.containerID != w.target.containerID {
		return // a stale run for an older container instance
	}
	w.inFlight = false
	w.lastProbe = d.at
	pod := w.target.pod
	if d.err != nil || d.result == messages.ProbeUnknown {
		// The probe could not run: throw the result away, as the kubelet does.
		klog.V(1).InfoS("Probe errored", "probeType", w.key.kind, "pod", klog.KObj(pod), "podUID", w.key.uid, "containerName", w.key.container, "err", d.err)
		w.event(pod, v1.EventTypeWarning, ReasonUnhealthy, "%s probe errored: %v", title(w.key.kind), d.err)
		w.report(ctx, nil)
		return
	}
	w.message = d.message
	if d.result == messages.ProbeFailure {
		klog.V(1).InfoS("Probe failed", "probeType", w.key.kind, "pod", klog.KObj(pod), "podUID", w.key.uid, "containerName", w.key.container, "probeResult", d.result, "output", d.message)
		w.event(pod, v1.EventTypeWarning, ReasonUnhealthy, "%s probe failed: %s", title(w.key.kind), d.message)
	} else if strings.HasPrefix(d.message, probe.RedirectWarning) {
		w.event(pod, v1.EventTypeWarning, ReasonProbeWarning, "%s probe warning: %s", title(w.key.kind), d.message)
	}
	if d.result == w.lastResult {
		w.run++
	} else {
		w.lastResult, w.run = d.result, 1
	}
	threshold := w.spec.successThreshold
	if d.result == messages.ProbeFailure {
		threshold = w.spec.failureThreshold
	}
	if w.run < threshold {
		w.report(ctx, nil)
		return
	}
	w.commit(ctx, d.result, d.message)
	switch {
	case d.result == messages.ProbeFailure && w.key.kind != messages.Readiness:
		// The container will be restarted; probe the next instance.
		w.run = 0
		w.behavior.Become(w.holding)
	case d.result == messages.ProbeSuccess && w.key.kind == messages.Startup:
		w.behavior.Become(w.holding)
	}
}

// commit sets the result and reports it, with a change when it differs
// from the last one reported for this container ID.
func (w *worker) commit(ctx actor.Context, result messages.ProbeResult, message string) {
	w.result = result
	if message != "" || result != messages.ProbeFailure {
		w.message = message
	}
	id := w.target.containerID
	if id == "" || (w.reportedOnce && w.reportedID == id && w.reportedRes == result) {
		w.report(ctx, nil)
		return
	}
	w.reportedOnce, w.reportedID, w.reportedRes = true, id, result
	w.report(ctx, &messages.ProbeResultChanged{
		PodUID:        w.key.uid,
		ContainerName: w.key.container,
		ContainerID:   id,
		Kind:          w.key.kind,
		Result:        result,
		Message:       message,
	})
}

// report sends the worker's state, and a change if any, to the manager.
func (w *worker) report(ctx actor.Context, changed *messages.ProbeResultChanged) {
	st := messages.ProbeState{
		ContainerName: w.key.container,
		ContainerID:   w.target.containerID,
		Kind:          w.key.kind,
		Result:        w.result,
		LastProbe:     w.lastProbe,
		Message:       w.message,
	}
	switch w.lastResult {
	case messages.ProbeSuccess:
		st.Successes = w.run
	case messages.ProbeFailure:
		st.Failures = w.run
	}
	ctx.Send(w.manager, &workerReport{from: ctx.Self(), key: w.key, state: st, changed: changed})
}

func (w *worker) event(pod *v1.Pod, eventType, reason, format string, args ...any) {
	if w.cfg.Recorder == nil || pod == nil {
		return
	}
	w.cfg.Recorder.Eventf(pod, eventType, reason, format, args...)
}

// runtimeID strips the "<runtime>://" prefix pod statuses carry.
func runtimeID(id string) string {
	if _, after, ok := strings.Cut(id, "://"); ok {
		return after
	}
	return id
}

func title(k messages.ProbeKind) string {
	s := string(k)
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
