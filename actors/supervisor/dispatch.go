package supervisor

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/messages"
)

// dispatch sends an update to the pod's actor, spawning it when needed.
// Static pods wait while another pod of the same full name runs.
func (s *supervisor) dispatch(ctx actor.Context, uid types.UID, u messages.SyncPod) {
	w := s.workers[uid]
	if w == nil {
		if u.UpdateType == messages.SyncPodKill && u.RunningPod == nil {
			return // nothing was started for it
		}
		if u.Pod != nil && isStatic(u.Pod) && !s.static.mayStart(uid, fullName(u.Pod)) {
			klog.InfoS("Static pod waits for another pod of the same name to finish", "pod", klog.KObj(u.Pod), "podUID", uid)
			return
		}
		if w = s.spawnWorker(ctx, uid, 1); w == nil {
			return
		}
	}
	s.remember(w, u)
	if !w.takesMessages() {
		return // replayed from w.last when it is respawned
	}
	ctx.Send(w.pid, &u)
}

// remember records what the worker was last asked, for replay after a
// restart; once killed, it stays a kill.
func (s *supervisor) remember(w *worker, u messages.SyncPod) {
	if w.killed() && u.UpdateType != messages.SyncPodKill {
		u.UpdateType, u.KillOptions = messages.SyncPodKill, w.last.KillOptions
	}
	if u.Pod == nil && u.RunningPod == nil {
		u.Pod, u.RunningPod = w.last.Pod, w.last.RunningPod
	}
	w.last = u
}

// desiredFor answers a restarted pod actor's GetDesiredPod.
func (s *supervisor) desiredFor(uid types.UID) *messages.DesiredPod {
	w := s.workers[uid]
	if w == nil || w.actor == actorPurging {
		return &messages.DesiredPod{}
	}
	u := w.last
	if d := s.pods[uid]; d != nil {
		u.Pod = d.pod
	}
	if u.UpdateType != messages.SyncPodKill {
		u.UpdateType = messages.SyncPodCreate
	}
	u.StartTime = s.cfg.Clock.Now()
	return &messages.DesiredPod{Found: true, Update: u, ActorRestarts: w.restarts}
}

// syncDue dispatches a sync to every pod whose requeue is due.
func (s *supervisor) syncDue(ctx actor.Context) {
	now := s.cfg.Clock.Now()
	for _, w := range s.workers {
		if !w.requeueAt.IsZero() && !now.Before(w.requeueAt) {
			s.resync(ctx, w)
		}
	}
}

// resync sends a periodic sync (a kill once the worker was killed).
func (s *supervisor) resync(ctx actor.Context, w *worker) {
	w.requeueAt = time.Time{}
	if w.workDone() || w.actor == actorPurging || w.actor == actorFailed {
		return
	}
	u := w.last
	if u.UpdateType != messages.SyncPodKill {
		u.UpdateType = messages.SyncPodSync
	}
	if d := s.pods[w.uid]; d != nil {
		u.Pod = d.pod
	}
	u.StartTime = s.cfg.Clock.Now()
	ctx.Send(w.pid, &u)
}
