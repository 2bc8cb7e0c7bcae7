package podactor

import (
	"context"

	"github.com/asynkron/protoactor-go/actor"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/actors/actorutil"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/podrules"
)

// lifecycle is where the worker stands in the pod's one-way lifecycle, the
// diagram in doc.go. It is the actor's only lifecycle state: the work type
// it reports, whether it is finished and what an update does all follow
// from it.
type lifecycle int

const (
	syncing     lifecycle = iota // Sync: containers are (to be) running
	terminating                  // Terminating: every update is a kill
	terminated                   // Terminated: the final status is being derived
	finished                     // the work is over; nothing runs again
)

func (l lifecycle) String() string {
	return [...]string{"syncing", "terminating", "terminated", "finished"}[l]
}

// workType is the state as the worker reports it.
func (l lifecycle) workType() messages.PodWorkType {
	switch l {
	case syncing:
		return messages.SyncWork
	case terminating:
		return messages.TerminatingWork
	}
	return messages.TerminatedWork
}

// update handles a SyncPod: it records the desired pod, moves the state
// forward when the update asks for termination, shortens the grace period,
// and queues the update (coalescing with a pending one).
func (a *podActor) update(ctx actor.Context, u *messages.SyncPod) {
	if a.state == finished {
		a.updateFinished(ctx, u)
		return
	}
	if u.Pod == nil && u.RunningPod == nil {
		klog.ErrorS(nil, "Ignoring update without pod", "podUID", a.uid, "update", u.String())
		return
	}
	first := a.pod == nil && a.runningPod == nil
	if a.state != syncing && u.UpdateType == messages.SyncPodCreate {
		// The UID was added again while stopping: restart once finished.
		a.requestRestart(ctx)
		return
	}
	a.record(u)
	switch a.state {
	case terminated:
		return
	case syncing:
		if first && u.Pod != nil && u.UpdateType != messages.SyncPodKill && podrules.IsTerminal(u.Pod.Status.Phase) && a.runtimeIdle() {
			// Terminal on first sight with nothing running: start nothing.
			klog.V(2).InfoS("Pod is terminal and not running, skipping to terminated", "pod", klog.KObj(u.Pod), "phase", u.Pod.Status.Phase)
			a.lastPhase = u.Pod.Status.Phase
			a.becomeTerminating(ctx, nil)
			a.becomeTerminated(ctx, false)
			return
		}
		if requestsTermination(u) {
			a.becomeTerminating(ctx, u.KillOptions)
		}
	}
	if a.state == terminating {
		u = a.asKill(u)
	}
	a.pending = coalesce(a.pending, u)
	a.startNext(ctx)
}

// updateFinished handles an update of a finished worker. A Create (the UID
// added again) requests a restart, as while stopping: the supervisor purges
// the worker and starts the pod afresh. A changed pod object (a deletion
// above all) is published with the final status, so the status entry shows
// it and a gracefully deleted pod is finalized, as the kubelet's status
// manager deletes a terminated pod once it is deleted. Anything else (a
// sync, a spec change: a terminal pod never runs again) is ignored.
func (a *podActor) updateFinished(ctx actor.Context, u *messages.SyncPod) {
	if u.UpdateType == messages.SyncPodCreate {
		a.requestRestart(ctx)
		return
	}
	if u.Pod == nil || a.pod == nil || a.final == nil || apiequality.Semantic.DeepEqual(u.Pod.ObjectMeta, a.pod.ObjectMeta) {
		klog.V(4).InfoS("Ignoring update for finished pod worker", "podUID", a.uid, "update", u.String())
		return
	}
	a.record(u)
	klog.V(2).InfoS("Finished pod changed, publishing it with its final status", "pod", klog.KObj(a.pod), "podUID", a.uid,
		"deleting", a.pod.DeletionTimestamp != nil, "phase", a.final.Status.Phase)
	ctx.Send(ctx.Parent(), computed(a.pod, a.final))
}

// requestRestart records that the UID was added again while the worker
// stops or has finished.
func (a *podActor) requestRestart(ctx actor.Context) {
	if !a.restartRequested {
		a.restartRequested = true
		a.notifyState(ctx)
	}
}

// record keeps the newest desired pod of an update.
func (a *podActor) record(u *messages.SyncPod) {
	if u.Pod != nil {
		a.pod = u.Pod
		a.fullName = u.Pod.Namespace + "/" + u.Pod.Name
		a.static = u.Pod.Annotations[messages.ConfigSourceAnnotation] == messages.SourceFile
		if a.lastPhase == "" {
			a.lastPhase = u.Pod.Status.Phase
		}
	}
	if u.RunningPod != nil && a.pod == nil {
		a.runningPod = u.RunningPod
		a.fullName = u.RunningPod.Namespace + "/" + u.RunningPod.Name
	}
}

// runtimeIdle reports whether the cache says nothing of the pod runs. An
// unknown status is not idle: the sync decides.
func (a *podActor) runtimeIdle() bool {
	s, err := a.cfg.Cache.Get(a.uid)
	return err == nil && s != nil && nothingRunning(s)
}

// asKill turns an update seen while terminating into a kill, shortening the
// grace period; a shorter grace cancels the kill in flight so it runs again
// with the new one.
func (a *podActor) asKill(u *messages.SyncPod) *messages.SyncPod {
	k := *u
	k.UpdateType = messages.SyncPodKill
	if k.KillOptions == nil {
		k.KillOptions = a.kill
	} else if k.KillOptions.Evict && (a.kill == nil || !a.kill.Evict) {
		a.kill = k.KillOptions // an eviction sticks
	}
	g := shortest(a.grace, gracePeriod(a.pod, k.KillOptions))
	a.grace = &g
	if a.work != nil && a.work.kind == workKill && g < a.work.grace {
		klog.V(2).InfoS("Grace period shortened, restarting kill", "podUID", a.uid, "from", a.work.grace, "to", g)
		a.cancelWork()
	}
	return &k
}

// becomeTerminating moves Sync → Terminating: it cancels a sync in flight
// and tells every part.
func (a *podActor) becomeTerminating(ctx actor.Context, kill *messages.KillOptions) {
	if a.state != syncing {
		return
	}
	a.state = terminating
	a.kill = kill
	g := gracePeriod(a.pod, kill)
	a.grace = &g
	if a.work != nil && a.work.kind == workSync {
		a.cancelWork()
	}
	for _, p := range a.parts() {
		p.terminating()
	}
	a.notifyState(ctx)
	if a.pod != nil && a.pod.DeletionTimestamp != nil && a.lastStatus != nil {
		// Show the deletion at once (operators see "Terminating"), not only
		// when the kill, which may take the whole grace period, is done.
		ctx.Send(ctx.Parent(), computed(a.pod, a.lastStatus))
	}
}

// becomeTerminated moves Terminating → Terminated and derives the final
// status (killed: a kill just ended).
func (a *podActor) becomeTerminated(ctx actor.Context, killed bool) {
	a.state = terminated
	a.pending = nil
	a.notifyState(ctx)
	cfg, uid, pod, minTime := a.cfg, a.uid, a.pod, a.lastSyncTime
	a.launch(ctx, &inflight{kind: workTerminated}, func(wctx context.Context) workDone {
		return runTerminated(wctx, cfg, uid, pod, minTime, killed)
	})
}

// startNext starts the pending update as the work of the current state,
// unless work is in flight.
func (a *podActor) startNext(ctx actor.Context) {
	u := a.pending
	if u == nil || a.work != nil {
		return
	}
	a.pending = nil
	cfg := a.cfg
	switch a.state {
	case syncing:
		readNow, stopWaiting := context.WithCancel(context.Background())
		restart, restartAll := a.restarts.take()
		j := syncJob{uid: a.uid, pod: a.pod, minTime: a.lastSyncTime, probes: a.probes.forSync(),
			restart: restart, restartAll: restartAll, readRuntime: a.retry.takeReadRuntime(), readNow: readNow}
		a.launch(ctx, &inflight{kind: workSync, stopWaiting: stopWaiting}, func(wctx context.Context) workDone {
			defer stopWaiting()
			return runSync(wctx, cfg, j)
		})
	case terminating:
		j := killJob{uid: a.uid, pod: a.pod, minTime: a.lastSyncTime, grace: *a.grace}
		if a.pod == nil {
			j.orphan = a.runningPod
		}
		a.launch(ctx, &inflight{kind: workKill, grace: j.grace}, func(wctx context.Context) workDone { return runKill(wctx, cfg, j) })
	}
}

// launch runs fn in a goroutine with a cancelable context as the work w;
// its result comes back to the actor as a workDone. A panic in fn is
// caught and re-raised in Receive so that supervision handles it.
func (a *podActor) launch(ctx actor.Context, w *inflight, fn func(context.Context) workDone) {
	w.id = workIDs.Add(1)
	wctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	a.work = w
	id, kind, started := w.id, w.kind, a.cfg.Clock.Now()
	actorutil.Go(actorutil.To(ctx), func() any {
		defer cancel()
		var r workDone
		func() {
			defer func() {
				if p := recover(); p != nil {
					r = workDone{panicked: p}
				}
			}()
			r = fn(wctx)
		}()
		r.id, r.kind, r.started = id, kind, started
		return &r
	})
}

// workFinished takes the result of the work in flight: a sync, a kill or
// the final status each finish their own way (report.go). A sync canceled
// by termination is not reported; the kill queued behind it starts.
func (a *podActor) workFinished(ctx actor.Context, m *workDone) {
	if !a.accept(m) {
		return
	}
	switch {
	case m.kind == workSync && a.state == syncing:
		a.syncDone(ctx, m)
	case m.kind == workSync:
		a.lastSyncTime = a.cfg.Clock.Now()
		a.startNext(ctx)
	case m.kind == workKill:
		a.killDone(ctx, m)
	case m.kind == workTerminated:
		a.terminatedDone(ctx, m)
	}
}
