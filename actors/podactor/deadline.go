package podactor

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/actorlet/actorlet/actors/actorutil"
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

// activeDeadline is the part that keeps the pod's active deadline: armed
// after every sync for the current spec, stopped when the pod terminates.
type activeDeadline struct {
	firstSync time.Time // the first sync of this worker
	at        time.Time // the armed deadline, zero when none
	cancel    func()    // stops its timer, nil when none runs
}

// synced (re)arms the deadline for pod after a sync that ended at now
// (lastStatus: the status it reported) and reports whether it has already
// passed. The timer sends a deadlineExceeded with send.
func (d *activeDeadline) synced(clk clock.Clock, pod *v1.Pod, lastStatus *v1.PodStatus, now time.Time, send func(any)) (passed bool) {
	if d.firstSync.IsZero() {
		d.firstSync = now
	}
	if pod == nil || pod.Spec.ActiveDeadlineSeconds == nil {
		d.stop()
		return false
	}
	at := d.activeSince(pod, lastStatus).Add(seconds.Duration(*pod.Spec.ActiveDeadlineSeconds))
	if at.Equal(d.at) {
		return false
	}
	d.stop()
	d.at = at
	left := at.Sub(clk.Now())
	if left <= 0 {
		return true
	}
	d.cancel = actorutil.After(clk, left, func() { send(&deadlineExceeded{at: at}) })
	return false
}

// activeSince is when the pod became active on this node: its status's
// start time (the first sandbox, or the pod's published status), else the
// first sync of this worker.
func (d *activeDeadline) activeSince(pod *v1.Pod, lastStatus *v1.PodStatus) time.Time {
	since := d.firstSync
	for _, st := range []*time.Time{statusStart(lastStatus), statusStart(&pod.Status)} {
		if st != nil && (since.IsZero() || st.Before(since)) {
			since = *st
		}
	}
	return since
}

// due reports whether m is the armed deadline's, and stops it if so.
func (d *activeDeadline) due(m *deadlineExceeded) bool {
	if d.at.IsZero() || !m.at.Equal(d.at) {
		return false
	}
	d.stopTimer()
	return true
}

// terminating stops the deadline: the pod is being killed already.
func (d *activeDeadline) terminating() { d.stop() }

func (d *activeDeadline) stop() {
	d.stopTimer()
	d.at = time.Time{}
}

func (d *activeDeadline) stopTimer() {
	if d.cancel != nil {
		d.cancel()
		d.cancel = nil
	}
}

// armDeadline tells the deadline part about a sync that did not find the
// pod terminal; a deadline already past kills the pod at once. It runs
// after every such sync, so a changed activeDeadlineSeconds takes effect.
func (a *podActor) armDeadline(ctx actor.Context) {
	var last *v1.PodStatus
	if a.lastStatus != nil {
		last = &a.lastStatus.Status
	}
	if a.deadline.synced(a.cfg.Clock, a.pod, last, a.lastSyncTime, actorutil.To(ctx)) {
		a.exceedDeadline(ctx)
	}
}

// onDeadline handles the timer: it kills the pod unless the deadline moved.
func (a *podActor) onDeadline(ctx actor.Context, m *deadlineExceeded) {
	if a.state != syncing || !a.deadline.due(m) {
		return
	}
	a.exceedDeadline(ctx)
}

func (a *podActor) exceedDeadline(ctx actor.Context) {
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
