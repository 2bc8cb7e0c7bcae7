package podactor

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"k8s.io/utils/clock"

	"github.com/actorlet/actorlet/actors/actorutil"
	"github.com/actorlet/actorlet/messages"
)

// retryWaiter is an error that is a wait with a known end: a container in
// CrashLoopBackOff or an image in pull back-off (cri/kuberuntime's kind
// errors). The pod can be synced again exactly then.
type retryWaiter interface {
	RetryAt() time.Time
}

// retryAt finds the earliest end of the waits among err's failures, and
// whether every failure is such a wait (then nothing else calls for the
// error back-off period).
func retryAt(err error) (at time.Time, onlyWaits bool) {
	fs := failures(err)
	onlyWaits = len(fs) > 0
	for _, f := range fs {
		w, ok := f.(retryWaiter)
		if !ok || w.RetryAt().IsZero() {
			onlyWaits = false
			continue
		}
		if t := w.RetryAt(); at.IsZero() || t.Before(at) {
			at = t
		}
	}
	return at, onlyWaits
}

// failures splits err into its failures: wrappers are looked through, joins
// are split, and a kind error (a retryWaiter, wait or not) is one failure.
func failures(err error) []error {
	if err == nil {
		return nil
	}
	if _, ok := err.(retryWaiter); ok {
		return []error{err}
	}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		var out []error
		for _, c := range u.Unwrap() {
			out = append(out, failures(c)...)
		}
		return out
	case interface{ Unwrap() error }:
		if c := u.Unwrap(); c != nil {
			return failures(c)
		}
	}
	return []error{err}
}

// retryDue is the pod actor's own timer: a back-off it is waiting on has
// ended. gen tells a timer armed before a newer one apart.
type retryDue struct{ gen uint64 }

// backOffRetry is the part that syncs the pod the instant a back-off it
// waits on ends: armed by a sync result that waits on back-offs, disarmed
// by any other result, when the pod terminates and when the actor stops.
type backOffRetry struct {
	gen    uint64
	at     time.Time // the armed end, zero when none
	cancel func()    // stops the armed timer, nil when none
	// readRuntime makes the next sync read the pod's status from the
	// runtime: a back-off ended, which no runtime event shows.
	readRuntime bool
}

// retrySafetyMargin is how long after a back-off's end the supervisor's
// periodic requeue comes, as a safety net behind the pod's own timer.
const retrySafetyMargin = time.Second

// synced arms the timer when a sync failed only because it waits on
// back-offs (or also on them), disarming it otherwise, and returns the
// requeue interval to report (after, the one the result calls for): the
// supervisor's requeue then follows the timer as a safety net. The timer
// sends a retryDue with send.
func (r *backOffRetry) synced(clk clock.Clock, m *workDone, after time.Duration, send func(any)) time.Duration {
	if m.kind != workSync || m.err == nil || m.canceled() {
		r.stop()
		return after
	}
	at, onlyWaits := retryAt(m.err)
	if at.IsZero() {
		r.stop()
		return after
	}
	now := clk.Now()
	if r.cancel == nil || !r.at.Equal(at) {
		r.stop()
		r.gen++
		r.at = at
		msg := &retryDue{gen: r.gen}
		r.cancel = actorutil.After(clk, at.Sub(now), func() { send(msg) })
	}
	if d := max(at.Sub(now), 0) + retrySafetyMargin; after > 0 && (onlyWaits || d < after) {
		return d
	}
	return after
}

// fired reports whether m is the armed timer's message, disarming it; the
// next sync then reads the runtime.
func (r *backOffRetry) fired(m *retryDue) bool {
	if r.cancel == nil || m.gen != r.gen {
		return false
	}
	r.cancel, r.at = nil, time.Time{}
	r.readRuntime = true
	return true
}

// takeReadRuntime tells the next sync whether to read the runtime, once.
func (r *backOffRetry) takeReadRuntime() bool {
	read := r.readRuntime
	r.readRuntime = false
	return read
}

// terminating disarms the timer: a terminating pod is not synced again.
func (r *backOffRetry) terminating() { r.stop() }

// stop disarms the timer, if armed.
func (r *backOffRetry) stop() {
	if r.cancel != nil {
		r.cancel()
		r.cancel = nil
	}
	r.at = time.Time{}
}

// retryNow syncs the pod when a back-off it waited on has ended: the
// kubelet leaves this to the next periodic resync, seconds late. A sync in
// flight that still waits for the PLEG cache (a resync or a relist's event
// can start one just before the end) stops waiting and reads the runtime:
// queued behind it, the retry would wait up to a relist period for the
// cache's next freshness tick. The retry still follows that sync, in case
// it had already acted before the end.
func (a *podActor) retryNow(ctx actor.Context, m *retryDue) {
	if a.state != syncing || a.pod == nil || !a.retry.fired(m) {
		return
	}
	if a.work != nil && a.work.kind == workSync && a.work.stopWaiting != nil {
		a.work.stopWaiting()
	}
	a.update(ctx, &messages.SyncPod{UpdateType: messages.SyncPodSync, Pod: a.pod, StartTime: a.cfg.Clock.Now()})
}
