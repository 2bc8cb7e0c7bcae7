package supervisor

import (
	"github.com/asynkron/protoactor-go/actor"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/messages"
)

// syncCompleted records when the pod wants its next sync; a phase change
// (RequeueAfter 0) syncs at once.
func (s *supervisor) syncCompleted(ctx actor.Context, m *messages.PodSyncCompleted) {
	w := s.workers[m.UID]
	if w == nil {
		return
	}
	w.lastErr = m.Err
	w.requeueAt = s.cfg.Clock.Now().Add(m.RequeueAfter)
	if m.RequeueAfter <= 0 {
		s.resync(ctx, w)
	}
}

// workerStateChanged records a worker's report; a finished static pod lets
// the next waiting pod of its name start.
func (s *supervisor) workerStateChanged(ctx actor.Context, m *messages.PodWorkerStateChanged) {
	w := s.workers[m.UID]
	if w == nil {
		return
	}
	w.report = *m
	s.usage = nil
	if m.Finished && m.Static {
		s.startNextStatic(ctx, m.FullName, m.UID)
	}
	if m.Finished {
		s.shutdownPodFinished(ctx, m.UID)
	}
	if m.Finished && s.pods[m.UID] == nil && w.actor == actorLive {
		// Nothing wants the pod any more: tear it down now rather than at
		// the next housekeeping tick.
		s.purgeRemoved(ctx, w)
	}
}

// startNextStatic releases a static pod name and starts the first waiting
// pod of that name that is still wanted.
func (s *supervisor) startNextStatic(ctx actor.Context, name string, finished types.UID) {
	s.static.release(name, finished)
	if s.node.shuttingDown {
		return // nothing new starts while the node shuts down
	}
	for {
		uid, ok := s.static.next(name)
		if !ok {
			return
		}
		d := s.pods[uid]
		if d == nil || d.rejected || d.done {
			continue
		}
		klog.InfoS("Starting waiting static pod", "pod", klog.KObj(d.pod), "podUID", uid)
		s.dispatch(ctx, uid, messages.SyncPod{UpdateType: messages.SyncPodCreate, Pod: d.pod, StartTime: s.cfg.Clock.Now()})
		return
	}
}
