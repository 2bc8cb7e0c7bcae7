package podactor

import (
	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/actors/actorutil"
	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/podrules"
)

// syncDone finishes a sync: the parts learn its result (probes first, so
// replaced containers' results are gone; the retry while reporting; the
// deadline once reported), and the pod moves to Terminating when the
// generated phase is terminal.
func (a *podActor) syncDone(ctx actor.Context, m *workDone) {
	a.lastSyncTime = a.cfg.Clock.Now()
	phaseChanged := false
	if m.apiStatus != nil {
		phaseChanged = m.apiStatus.Status.Phase != a.lastPhase
		a.lastPhase = m.apiStatus.Status.Phase
	}
	a.probes.synced(m.status)
	if m.err != nil && !m.canceled() {
		klog.ErrorS(m.err, "Error syncing pod, retrying later", "pod", klog.KObj(a.pod), "podUID", a.uid)
	}
	a.report(ctx, m, phaseChanged)
	if !m.terminal {
		a.armDeadline(ctx)
	}
	if m.terminal {
		klog.V(2).InfoS("Pod reached a terminal phase, terminating", "pod", klog.KObj(a.pod), "phase", a.lastPhase)
		a.becomeTerminating(ctx, nil)
		a.pending = coalesce(a.pending, a.asKill(&messages.SyncPod{UpdateType: messages.SyncPodKill, Pod: a.pod, StartTime: a.cfg.Clock.Now()}))
	}
	a.startNext(ctx)
}

// killDone finishes a kill: on success the pod is Terminated; a kill
// canceled for a shorter grace period runs again at once; another error is
// retried when the supervisor requeues the pod.
func (a *podActor) killDone(ctx actor.Context, m *workDone) {
	a.lastSyncTime = a.cfg.Clock.Now()
	if m.canceled() {
		if a.pending == nil {
			a.pending = &messages.SyncPod{UpdateType: messages.SyncPodKill, Pod: a.pod, RunningPod: a.runningPod}
		}
		a.startNext(ctx)
		return
	}
	if m.err != nil {
		klog.ErrorS(m.err, "Error killing pod, retrying later", "podUID", a.uid, "fullName", a.fullName)
	}
	a.report(ctx, m, false)
	if m.err != nil {
		a.startNext(ctx)
		return
	}
	a.becomeTerminated(ctx, true)
}

// terminatedDone publishes the final status and finishes the worker.
func (a *podActor) terminatedDone(ctx actor.Context, m *workDone) {
	if m.err != nil {
		klog.ErrorS(m.err, "Error computing final pod status, using the last known one", "podUID", a.uid)
	}
	if !m.acting.IsZero() {
		klog.V(4).InfoS("Pod work done", "pod", klog.KObj(a.pod), "podUID", a.uid, "work", m.kind, "waitedForStatus", m.acting.Sub(m.started))
	}
	if a.pod != nil {
		final := cri.APIPodStatus{Status: a.pod.Status}
		if m.apiStatus != nil {
			final = *m.apiStatus
		}
		final.Status = terminalStatus(final.Status, a.lastPhase, a.kill)
		if prior := a.pod.Status; podrules.IsTerminal(prior.Phase) && final.Status.Reason == "" && final.Status.Message == "" {
			// Terminal before this worker (the last status published, from
			// before an agent restart): its reason stays.
			final.Status.Reason, final.Status.Message = prior.Reason, prior.Message
		}
		a.final = &final
		ctx.Send(ctx.Parent(), computed(a.pod, a.final))
	}
	a.state = finished
	a.notifyState(ctx)
}

// report tells the parent that a unit of work finished, with the status it
// computed.
func (a *podActor) report(ctx actor.Context, m *workDone, phaseChanged bool) {
	now := a.cfg.Clock.Now()
	errText := ""
	if m.err != nil {
		errText = m.err.Error()
	}
	a.lastSyncError = errText
	after := requeueAfter(phaseChanged, m.err, a.cfg.ResyncInterval, a.cfg.BackOffPeriod)
	after = a.retry.synced(a.cfg.Clock, m, after, actorutil.To(ctx))
	a.nextSyncTime = now.Add(after)
	ut := messages.SyncPodSync
	if m.kind != workSync {
		ut = messages.SyncPodKill
	}
	from := m.acting
	if from.IsZero() {
		from = m.started // it failed before acting
	}
	klog.V(4).InfoS("Pod work done", "pod", klog.KObj(a.pod), "podUID", a.uid, "work", m.kind,
		"waitedForStatus", from.Sub(m.started), "acted", now.Sub(from), "requeueAfter", after)
	ctx.Send(ctx.Parent(), &messages.PodSyncCompleted{UID: a.uid, UpdateType: ut, Err: errText, Duration: now.Sub(from), RequeueAfter: after})
	if m.apiStatus != nil && a.pod != nil && !m.canceled() {
		a.lastStatus = m.apiStatus
		ctx.Send(ctx.Parent(), computed(a.pod, m.apiStatus))
	}
}

// computed is the message that reports s as pod's status.
func computed(pod *v1.Pod, s *cri.APIPodStatus) *messages.PodStatusComputed {
	return &messages.PodStatusComputed{Pod: pod, Status: s.Status, SandboxReady: s.SandboxReady}
}

// notifyState tells the parent the worker's state.
func (a *podActor) notifyState(ctx actor.Context) {
	ctx.Send(ctx.Parent(), &messages.PodWorkerStateChanged{
		UID: a.uid, FullName: a.fullName, WorkType: a.state.workType(), Finished: a.state == finished,
		RestartRequested: a.restartRequested, Static: a.static,
	})
}

// describe is the worker's state for operators.
func (a *podActor) describe() *messages.PodWorkerDescription {
	d := &messages.PodWorkerDescription{
		Found: true, UID: a.uid, FullName: a.fullName, WorkType: a.state.workType(), Working: a.work != nil,
		RestartRequested: a.restartRequested, LastSyncTime: a.lastSyncTime, LastSyncError: a.lastSyncError,
		NextSyncTime: a.nextSyncTime, ActorRestarts: a.actorRestarts,
	}
	if a.pending != nil {
		d.PendingUpdate = a.pending.String()
	}
	if a.grace != nil {
		g := *a.grace
		d.GracePeriod = &g
	}
	return d
}
