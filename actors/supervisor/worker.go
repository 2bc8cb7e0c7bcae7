package supervisor

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/actors/podactor"
	"github.com/actorlet/actorlet/messages"
)

// worker is the supervisor's record of one pod actor.
type worker struct {
	uid        types.UID
	pid        *actor.PID
	generation int
	last       messages.SyncPod // what rebuilds the worker after a restart
	killed     bool             // a kill was dispatched

	state            messages.PodWorkType
	finished         bool
	restartRequested bool
	static           bool
	fullName         string
	requeueAt        time.Time // zero: no resync due

	stopping   bool // purged: stop requested, waiting for Terminated
	restarting bool // panicked: suspended until supervision restarts it
	failed     bool // supervision gave up: respawn after failedAt + delay
	failedAt   time.Time
	restarts   int
	lastErr    string
}

// liveWorker returns the worker of uid when it can take messages.
func (s *supervisor) liveWorker(uid types.UID) *worker {
	w := s.workers[uid]
	if w == nil || w.stopping || w.failed {
		return nil
	}
	return w
}

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
	if w.stopping || w.failed {
		return // replayed from w.last when it is respawned
	}
	ctx.Send(w.pid, &u)
}

// remember records what the worker was last asked, for replay after a
// restart; once killed, it stays a kill.
func (s *supervisor) remember(w *worker, u messages.SyncPod) {
	if u.UpdateType == messages.SyncPodKill {
		w.killed = true
	}
	if w.killed && u.UpdateType != messages.SyncPodKill {
		u.UpdateType, u.KillOptions = messages.SyncPodKill, w.last.KillOptions
	}
	if u.Pod == nil && u.RunningPod == nil {
		u.Pod, u.RunningPod = w.last.Pod, w.last.RunningPod
	}
	w.last = u
}

// spawnWorker starts the pod actor of uid.
func (s *supervisor) spawnWorker(ctx actor.Context, uid types.UID, generation int) *worker {
	props, err := podactor.Props(s.cfg.podConfig(), uid)
	if err != nil {
		klog.ErrorS(err, "Cannot build pod worker", "podUID", uid)
		return nil
	}
	pid, err := ctx.SpawnNamed(props.Configure(s.cfg.PropsOptions...), actorName(string(uid), generation))
	if err != nil {
		klog.ErrorS(err, "Cannot spawn pod worker", "podUID", uid)
		return nil
	}
	w := &worker{uid: uid, pid: pid, generation: generation}
	if old := s.workers[uid]; old != nil {
		w.restarts, w.lastErr, w.last, w.killed = old.restarts, old.lastErr, old.last, old.killed
	}
	s.workers[uid] = w
	s.byPID[pid.Id] = uid
	return w
}

// desiredFor answers a restarted pod actor's GetDesiredPod.
func (s *supervisor) desiredFor(uid types.UID) *messages.DesiredPod {
	w := s.workers[uid]
	if w == nil || w.stopping {
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
	if w.state == messages.TerminatedWork || w.finished || w.stopping || w.failed {
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

// workerStateChanged records a worker's state; a finished static pod lets
// the next waiting pod of its name start.
func (s *supervisor) workerStateChanged(ctx actor.Context, m *messages.PodWorkerStateChanged) {
	w := s.workers[m.UID]
	if w == nil {
		return
	}
	w.state, w.finished, w.restartRequested, w.static, w.fullName = m.WorkType, m.Finished, m.RestartRequested, m.Static, m.FullName
	s.usage = nil
	if m.Finished && m.Static {
		s.startNextStatic(ctx, m.FullName, m.UID)
	}
}

// startNextStatic releases a static pod name and starts the first waiting
// pod of that name that is still wanted.
func (s *supervisor) startNextStatic(ctx actor.Context, name string, finished types.UID) {
	s.static.release(name, finished)
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

// childFailed records a supervision decision about a child.
func (s *supervisor) childFailed(m *childFailed) {
	uid, ok := s.byPID[m.Child.Id]
	if !ok {
		return
	}
	if w := s.workers[uid]; w != nil {
		w.restarting = !m.GaveUp
		w.restarts++
		w.lastErr = fmt.Sprintf("pod worker panicked (%d failures): %s", m.Failures, m.Reason)
	}
}

// childTerminated handles a stopped child: a purged worker is forgotten (and
// restarted when wanted again); any other stop is a failure, respawned later.
// protoactor tells a parent about every child that stops, so children are
// not watched as well (that would deliver Terminated twice); respawned
// workers get a new name (uid~generation) so a late Terminated of the old
// actor is never taken for the new one's.
func (s *supervisor) childTerminated(ctx actor.Context, who *actor.PID) {
	uid, ok := s.byPID[who.Id]
	if !ok {
		s.coreChildTerminated(who)
		return
	}
	delete(s.byPID, who.Id)
	s.usage = nil
	w := s.workers[uid]
	if w == nil || w.pid.Id != who.Id {
		return
	}
	if !w.stopping {
		w.failed, w.failedAt = true, s.cfg.Clock.Now()
		klog.ErrorS(nil, "Pod worker stopped after repeated failures, respawning later", "podUID", uid,
			"restarts", w.restarts, "lastError", w.lastErr, "respawnAfter", s.cfg.WorkerRespawnDelay)
		return
	}
	delete(s.workers, uid)
	d := s.pods[uid]
	if d == nil {
		return
	}
	if (w.restartRequested || d.readded) && d.pod.DeletionTimestamp == nil {
		d.readded = false
		klog.InfoS("Restarting pod worker for a pod added again", "pod", klog.KObj(d.pod), "podUID", uid)
		s.dispatch(ctx, uid, messages.SyncPod{UpdateType: messages.SyncPodCreate, Pod: d.pod, StartTime: s.cfg.Clock.Now()})
		return
	}
	d.done = true
}

// coreChildTerminated remembers a stopped pleg/prober/status child so
// housekeeping respawns it.
func (s *supervisor) coreChildTerminated(who *actor.PID) {
	for name, p := range map[string]**actor.PID{"pleg": &s.pleg, "prober": &s.prober, "status": &s.status} {
		if *p != nil && (*p).Id == who.Id {
			klog.ErrorS(nil, "Child actor stopped, respawning at housekeeping", "actor", name)
			*p = nil
			switch name {
			case "pleg":
				s.lostChildren[name] = s.cfg.Children.PLEG
			case "prober":
				s.lostChildren[name] = s.cfg.Children.Prober
			case "status":
				s.lostChildren[name] = s.cfg.Children.Status
			}
		}
	}
}

// describe forwards to a live worker (keeping the sender) or answers from
// the supervisor's record.
func (s *supervisor) describe(ctx actor.Context, m *messages.DescribePodWorker) {
	w := s.workers[m.UID]
	if w == nil {
		ctx.Respond(&messages.PodWorkerDescription{UID: m.UID})
		return
	}
	if !w.stopping && !w.failed && !w.restarting {
		// Ask the pod actor, but never let an operator wait on an actor
		// that cannot answer (its mailbox is suspended while supervision
		// restarts it): after a short wait the loop answers from its own
		// record. The loop itself does not block meanwhile.
		sender, uid := ctx.Sender(), m.UID
		f := ctx.RequestFuture(w.pid, m, describeTimeout)
		ctx.ReenterAfter(f, func(res interface{}, err error) {
			if err != nil {
				d := s.describeFromRecord(uid)
				d.LastSyncError = fmt.Sprintf("pod worker did not answer (%v); last recorded error: %s", err, d.LastSyncError)
				res = d
			}
			if sender != nil {
				ctx.Send(sender, res)
			}
		})
		return
	}
	ctx.Respond(s.describeFromRecord(m.UID))
}

// describeTimeout bounds the wait for a pod actor's own description.
const describeTimeout = time.Second

// describeFromRecord describes a worker from what the loop knows of it.
func (s *supervisor) describeFromRecord(uid types.UID) *messages.PodWorkerDescription {
	w := s.workers[uid]
	if w == nil {
		return &messages.PodWorkerDescription{UID: uid}
	}
	d := &messages.PodWorkerDescription{Found: true, UID: uid, FullName: w.fullName, WorkType: w.state,
		RestartRequested: w.restartRequested, LastSyncError: w.lastErr, ActorRestarts: w.restarts}
	if w.restarting {
		d.LastSyncError = fmt.Sprintf("pod worker restarting after a panic: %s", w.lastErr)
	}
	if w.failed {
		d.LastSyncError = fmt.Sprintf("pod worker failed and is stopped (%s); respawning", w.lastErr)
		d.NextSyncTime = w.failedAt.Add(s.cfg.WorkerRespawnDelay)
	}
	return d
}

// currentUsage is what the active pods use of the node, rebuilt when stale.
func (s *supervisor) currentUsage() *usage {
	if s.usage == nil {
		s.usage = newUsage(s.activePods())
	}
	return s.usage
}

// activePods are the admitted pods that are not done.
func (s *supervisor) activePods() []*v1.Pod {
	var out []*v1.Pod
	for uid, d := range s.pods {
		if d.rejected || d.done {
			continue
		}
		if w := s.workers[uid]; w != nil && (w.state == messages.TerminatedWork || w.finished) {
			continue
		}
		out = append(out, d.pod)
	}
	return out
}

func isStatic(p *v1.Pod) bool {
	return p.Annotations[messages.ConfigSourceAnnotation] == messages.SourceFile
}

func fullName(p *v1.Pod) string { return p.Namespace + "/" + p.Name }
