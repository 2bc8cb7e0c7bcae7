package podactor

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"k8s.io/utils/clock"

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

// retryTimer is the one timer a pod actor keeps for the end of a back-off.
type retryTimer struct {
	gen  uint64
	at   time.Time
	stop func()
}

// arm schedules retryDue at at (replacing an armed timer for another
// instant); the message goes to self through root.
func (t *retryTimer) arm(c clock.Clock, root *actor.RootContext, self *actor.PID, at time.Time) {
	if t.stop != nil && t.at.Equal(at) {
		return
	}
	t.disarm()
	t.gen++
	t.at = at
	msg := &retryDue{gen: t.gen}
	t.stop = afterFunc(c, at.Sub(c.Now()), func() { root.Send(self, msg) })
}

// disarm stops the armed timer, if any.
func (t *retryTimer) disarm() {
	if t.stop != nil {
		t.stop()
		t.stop = nil
	}
	t.at = time.Time{}
}

// fired reports whether m is the armed timer's message, disarming it.
func (t *retryTimer) fired(m *retryDue) bool {
	if t.stop == nil || m.gen != t.gen {
		return false
	}
	t.stop, t.at = nil, time.Time{}
	return true
}

// afterFunc runs f after d on clock c and returns a function that cancels
// it. Clocks that can (the real one, the fake one of tests) do it
// themselves; for others a goroutine waits on a timer.
func afterFunc(c clock.Clock, d time.Duration, f func()) func() {
	if d < 0 {
		d = 0
	}
	if dc, ok := c.(clock.WithDelayedExecution); ok {
		t := dc.AfterFunc(d, f)
		return func() { t.Stop() }
	}
	t := c.NewTimer(d)
	done := make(chan struct{})
	go func() {
		select {
		case <-t.C():
			f()
		case <-done:
		}
	}()
	return func() {
		t.Stop()
		close(done)
	}
}

// retryNow syncs the pod when a back-off it waited on has ended: the
// kubelet leaves this to the next periodic resync, seconds late. A sync in
// flight that still waits for the PLEG cache (a resync or a relist's event
// can start one just before the end) stops waiting and reads the runtime:
// queued behind it, the retry would wait up to a relist period for the
// cache's next freshness tick. The retry still follows that sync, in case
// it had already acted before the end.
func (a *podActor) retryNow(ctx actor.Context, m *retryDue) {
	if !a.retry.fired(m) || a.workType != messages.SyncWork || a.pod == nil {
		return
	}
	if a.working && a.workKind == workSync && a.stopWaiting != nil {
		a.stopWaiting()
	}
	a.readRuntime = true
	a.update(ctx, &messages.SyncPod{UpdateType: messages.SyncPodSync, Pod: a.pod, StartTime: a.cfg.Clock.Now()})
}

// retrySafetyMargin is how long after a back-off's end the supervisor's
// periodic requeue comes, as a safety net behind the pod's own timer.
const retrySafetyMargin = time.Second

// scheduleRetry arms the retry timer when a sync failed only because it
// waits on back-offs (or also on them), and returns the requeue interval to
// report: the supervisor's requeue then follows the timer as a safety net.
func (a *podActor) scheduleRetry(ctx actor.Context, m *workDone, now time.Time, after time.Duration) time.Duration {
	if m.kind != workSync || m.err == nil || m.canceled() {
		a.retry.disarm()
		return after
	}
	at, onlyWaits := retryAt(m.err)
	if at.IsZero() {
		a.retry.disarm()
		return after
	}
	a.retry.arm(a.cfg.Clock, ctx.ActorSystem().Root, ctx.Self(), at)
	if d := max(at.Sub(now), 0) + retrySafetyMargin; after > 0 && (onlyWaits || d < after) {
		return d
	}
	return after
}
