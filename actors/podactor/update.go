package podactor

import (
	"context"

	"github.com/asynkron/protoactor-go/actor"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/actors/actorutil"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/podrules"
)

// update handles a SyncPod in any live state: it records the desired pod,
// moves the state forward when the update asks for termination, shortens the
// grace period, and queues the update (coalescing with a pending one).
func (a *podActor) update(ctx actor.Context, u *messages.SyncPod) {
	if a.finished {
		return
	}
	if u.Pod == nil && u.RunningPod == nil {
		klog.ErrorS(nil, "Ignoring update without pod", "podUID", a.uid, "update", u.String())
		return
	}
	first := !a.seen
	a.seen = true
	if a.workType != messages.SyncWork && u.UpdateType == messages.SyncPodCreate {
		// The UID was added again while stopping: restart once finished.
		if !a.restartRequested {
			a.restartRequested = true
			a.notifyState(ctx)
		}
		return
	}
	a.record(u)
	if a.workType == messages.TerminatedWork {
		return
	}
	if first && u.Pod != nil && u.UpdateType != messages.SyncPodKill && podrules.IsTerminal(u.Pod.Status.Phase) && a.runtimeIdle() {
		// Terminal on first sight with nothing running: start nothing.
		klog.V(2).InfoS("Pod is terminal and not running, skipping to terminated", "pod", klog.KObj(u.Pod), "phase", u.Pod.Status.Phase)
		a.lastPhase = u.Pod.Status.Phase
		a.becomeTerminating(ctx, nil)
		a.becomeTerminated(ctx, false)
		return
	}
	if a.workType == messages.SyncWork && requestsTermination(u) {
		a.becomeTerminating(ctx, u.KillOptions)
	}
	if a.workType == messages.TerminatingWork {
		u = a.asKill(ctx, u)
	}
	a.pending = coalesce(a.pending, u)
	if !a.working {
		a.startNext(ctx)
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
func (a *podActor) asKill(ctx actor.Context, u *messages.SyncPod) *messages.SyncPod {
	k := *u
	k.UpdateType = messages.SyncPodKill
	if k.KillOptions == nil {
		k.KillOptions = a.kill
	} else if k.KillOptions.Evict && (a.kill == nil || !a.kill.Evict) {
		a.kill = k.KillOptions // an eviction sticks
	}
	g := shortest(a.grace, gracePeriod(a.pod, k.KillOptions))
	a.grace = &g
	if a.working && a.workKind == workKill && g < a.inflightGrace {
		klog.V(2).InfoS("Grace period shortened, restarting kill", "podUID", a.uid, "from", a.inflightGrace, "to", g)
		a.cancelWork()
	}
	return &k
}

// becomeTerminating moves Sync → Terminating and cancels a sync in flight.
func (a *podActor) becomeTerminating(ctx actor.Context, kill *messages.KillOptions) {
	if a.workType != messages.SyncWork {
		return
	}
	a.workType = messages.TerminatingWork
	a.kill = kill
	a.deadline.stop()
	g := gracePeriod(a.pod, kill)
	a.grace = &g
	a.behavior.Become(a.terminating)
	if a.working && a.workKind == workSync {
		a.cancelWork()
	}
	a.failedProbes = map[string]probeFailure{}
	a.startedProbes = map[string]string{}
	a.restart, a.restartAll = nil, false
	a.notifyState(ctx)
	if a.pod != nil && a.pod.DeletionTimestamp != nil && a.lastStatus != nil {
		// Show the deletion at once (operators see "Terminating"), not only
		// when the kill, which may take the whole grace period, is done.
		ctx.Send(ctx.Parent(), &messages.PodStatusComputed{Pod: a.pod, Status: *a.lastStatus})
	}
}

// becomeTerminated moves Terminating → Terminated and derives the final
// status (killed: a kill just ended).
func (a *podActor) becomeTerminated(ctx actor.Context, killed bool) {
	a.workType = messages.TerminatedWork
	a.pending = nil
	a.behavior.Become(a.terminated)
	a.notifyState(ctx)
	cfg, uid, pod, minTime := a.cfg, a.uid, a.pod, a.lastSyncTime
	a.launch(ctx, workTerminated, func(wctx context.Context) workDone {
		return runTerminated(wctx, cfg, uid, pod, minTime, killed)
	})
}

// startNext starts the pending update as the work of the current state.
func (a *podActor) startNext(ctx actor.Context) {
	u := a.pending
	if u == nil || a.working {
		return
	}
	a.pending = nil
	cfg := a.cfg
	switch a.workType {
	case messages.SyncWork:
		readNow, stopWaiting := context.WithCancel(context.Background())
		j := syncJob{uid: a.uid, pod: a.pod, minTime: a.lastSyncTime, probes: a.probeMap(),
			restart: a.restart, restartAll: a.restartAll, readRuntime: a.readRuntime, readNow: readNow}
		a.restart, a.restartAll, a.readRuntime = nil, false, false
		a.launch(ctx, workSync, func(wctx context.Context) workDone {
			defer stopWaiting()
			return runSync(wctx, cfg, j)
		})
		a.stopWaiting = stopWaiting
	case messages.TerminatingWork:
		j := killJob{uid: a.uid, pod: a.pod, minTime: a.lastSyncTime, grace: *a.grace}
		if a.pod == nil {
			j.orphan = a.runningPod
		}
		a.inflightGrace = j.grace
		a.launch(ctx, workKill, func(wctx context.Context) workDone { return runKill(wctx, cfg, j) })
	}
}

// launch runs fn in a goroutine with a cancelable context; its result comes
// back to the actor as a workDone. A panic in fn is caught and re-raised in
// Receive so that supervision handles it.
func (a *podActor) launch(ctx actor.Context, kind workKind, fn func(context.Context) workDone) {
	id := workIDs.Add(1)
	wctx, cancel := context.WithCancel(context.Background())
	a.working, a.workID, a.workKind, a.cancel = true, id, kind, cancel
	started := a.cfg.Clock.Now()
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
