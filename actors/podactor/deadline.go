package podactor

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/seconds"
)

// activeDeadlineSeconds, as the kubelet's active deadline handler: a pod
// active on the node longer than spec.activeDeadlineSeconds (counted from
// its start time) is killed and ends Failed with reason DeadlineExceeded.
const (
	reasonDeadlineExceeded  = "DeadlineExceeded"
	messageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// deadlineExceeded is the pod's own timer firing for the deadline at.
type deadlineExceeded struct{ at time.Time }

// deadlineTimer is the armed deadline of a pod actor.
type deadlineTimer struct {
	at     time.Time
	cancel chan struct{} // closed to stop the timer's goroutine
}

func (d *deadlineTimer) stop() {
	if d.cancel != nil {
		close(d.cancel)
		d.cancel = nil
	}
	d.at = time.Time{}
}

// start sends msg to self after d on clk, unless stopped first.
func (d *deadlineTimer) start(clk clock.Clock, left time.Duration, send func()) {
	cancel := make(chan struct{})
	d.cancel = cancel
	t := clk.NewTimer(left)
	go func() {
		defer t.Stop()
		select {
		case <-t.C():
			send()
		case <-cancel:
		}
	}()
}

// activeSince is when the pod became active on this node: its status's
// start time (the first sandbox, or the pod's published status), else the
// first sync of this worker.
func (a *podActor) activeSince() time.Time {
	since := a.firstSync
	for _, st := range []*time.Time{statusStart(a.lastStatus), statusStart(&a.pod.Status)} {
		if st != nil && (since.IsZero() || st.Before(since)) {
			since = *st
		}
	}
	return since
}

// armDeadline (re)arms the deadline timer for the pod's current spec; a
// deadline already past kills the pod at once. It is called after every
// sync, so a changed activeDeadlineSeconds takes effect.
func (a *podActor) armDeadline(ctx actor.Context) {
	if a.workType != messages.SyncWork || a.pod == nil || a.pod.Spec.ActiveDeadlineSeconds == nil {
		a.deadline.stop()
		return
	}
	since := a.activeSince()
	if since.IsZero() {
		return
	}
	at := since.Add(seconds.Duration(*a.pod.Spec.ActiveDeadlineSeconds))
	if at.Equal(a.deadline.at) {
		return
	}
	a.deadline.stop()
	a.deadline.at = at
	left := at.Sub(a.cfg.Clock.Now())
	if left <= 0 {
		a.exceedDeadline(ctx)
		return
	}
	self, root := ctx.Self(), ctx.ActorSystem().Root
	a.deadline.start(a.cfg.Clock, left, func() { root.Send(self, &deadlineExceeded{at: at}) })
}

// onDeadline handles the timer: it kills the pod unless the deadline moved.
func (a *podActor) onDeadline(ctx actor.Context, m *deadlineExceeded) {
	if a.workType != messages.SyncWork || !m.at.Equal(a.deadline.at) {
		return
	}
	a.exceedDeadline(ctx)
}

func (a *podActor) exceedDeadline(ctx actor.Context) {
	if a.deadline.cancel != nil {
		close(a.deadline.cancel)
		a.deadline.cancel = nil
	}
	klog.InfoS("Pod exceeded its active deadline, killing it", "pod", klog.KObj(a.pod), "podUID", a.uid,
		"activeDeadlineSeconds", *a.pod.Spec.ActiveDeadlineSeconds)
	a.update(ctx, &messages.SyncPod{UpdateType: messages.SyncPodKill, Pod: a.pod, StartTime: a.cfg.Clock.Now(),
		KillOptions: &messages.KillOptions{Evict: true, Reason: reasonDeadlineExceeded, Message: messageDeadlineExceeded}})
}

func statusStart(s *v1.PodStatus) *time.Time {
	if s == nil || s.StartTime == nil || s.StartTime.IsZero() {
		return nil
	}
	t := s.StartTime.Time
	return &t
}
