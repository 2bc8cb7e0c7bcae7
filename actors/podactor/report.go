package podactor

import (
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages"
)

// syncDone finishes a sync: it reports, and moves to Terminating when the
// generated phase is terminal.
func (a *podActor) syncDone(ctx actor.Context, m *workDone) {
	a.lastSyncTime = a.cfg.Clock.Now()
	phaseChanged := false
	if m.apiStatus != nil {
		phaseChanged = m.apiStatus.Phase != a.lastPhase
		a.lastPhase = m.apiStatus.Phase
	}
	a.pruneProbes(m.status)
	if m.err != nil && !m.canceled() {
		klog.ErrorS(m.err, "Error syncing pod, retrying later", "pod", klog.KObj(a.pod), "podUID", a.uid)
	}
	a.report(ctx, m, phaseChanged)
	if a.firstSync.IsZero() {
		a.firstSync = a.lastSyncTime
	}
	if !m.terminal {
		a.armDeadline(ctx)
	}
	if m.terminal {
		klog.V(2).InfoS("Pod reached a terminal phase, terminating", "pod", klog.KObj(a.pod), "phase", a.lastPhase)
		a.becomeTerminating(ctx, nil)
		a.pending = coalesce(a.pending, a.asKill(ctx, &messages.SyncPod{UpdateType: messages.SyncPodKill, Pod: a.pod, StartTime: a.cfg.Clock.Now()}))
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
		base := a.pod.Status
		if m.apiStatus != nil {
			base = *m.apiStatus
		}
		final := terminalStatus(base, a.lastPhase, a.kill)
		a.final = &final
		ctx.Send(ctx.Parent(), &messages.PodStatusComputed{Pod: a.pod, Status: final})
	}
	a.finished = true
	a.behavior.Become(a.done)
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
	after = a.scheduleRetry(ctx, m, now, after)
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
		ctx.Send(ctx.Parent(), &messages.PodStatusComputed{Pod: a.pod, Status: *m.apiStatus})
	}
}

// notifyState tells the parent the worker's state.
func (a *podActor) notifyState(ctx actor.Context) {
	ctx.Send(ctx.Parent(), &messages.PodWorkerStateChanged{
		UID: a.uid, FullName: a.fullName, WorkType: a.workType, Finished: a.finished,
		RestartRequested: a.restartRequested, Static: a.static,
	})
}

// probeResult remembers liveness and startup failures per container
// instance and syncs the pod so the runtime restarts the container. A
// sidecar's startup success is remembered too and syncs the pod: the next
// init container or the regular containers start once it is started.
func (a *podActor) probeResult(ctx actor.Context, m *messages.ProbeResultChanged) {
	if m.Kind == messages.Readiness {
		return
	}
	if m.Kind == messages.Startup {
		if m.Result == messages.ProbeSuccess {
			a.startedProbes[m.ContainerName] = runtimeContainerID(m.ContainerID)
			if a.workType == messages.SyncWork && a.pod != nil && isSidecar(a.pod, m.ContainerName) {
				a.update(ctx, &messages.SyncPod{UpdateType: messages.SyncPodSync, Pod: a.pod, StartTime: a.cfg.Clock.Now()})
			}
		} else {
			delete(a.startedProbes, m.ContainerName)
		}
	}
	if m.Result != messages.ProbeFailure {
		delete(a.failedProbes, m.ContainerName)
		return
	}
	a.failedProbes[m.ContainerName] = probeFailure{containerID: runtimeContainerID(m.ContainerID), message: m.Message, startup: m.Kind == messages.Startup}
	if a.workType == messages.SyncWork && a.pod != nil {
		a.update(ctx, &messages.SyncPod{UpdateType: messages.SyncPodSync, Pod: a.pod, StartTime: a.cfg.Clock.Now()})
	}
}

// runtimeContainerID turns the API form of a container ID
// ("<runtime>://<id>", as in v1.ContainerStatus and so in probe results)
// into the runtime's ID, the form cri.PodStatus and SyncPod use.
func runtimeContainerID(id string) string {
	if _, after, ok := strings.Cut(id, "://"); ok {
		return after
	}
	return id
}

// isSidecar reports whether name is a restartable init container of pod.
func isSidecar(pod *v1.Pod, name string) bool {
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.Name == name {
			return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
		}
	}
	return false
}

// probeMap is the probes argument of SyncPod, by container ID.
func (a *podActor) probeMap() cri.Probes {
	if len(a.failedProbes) == 0 && len(a.startedProbes) == 0 {
		return nil
	}
	out := make(cri.Probes, len(a.failedProbes)+len(a.startedProbes))
	for _, id := range a.startedProbes {
		out[id] = cri.ProbeState{Started: true}
	}
	for _, f := range a.failedProbes {
		s := out[f.containerID]
		s.Failed, s.Message, s.Startup = true, f.message, f.startup
		out[f.containerID] = s
	}
	return out
}

// pruneProbes forgets failures of containers that were replaced.
func (a *podActor) pruneProbes(s *cri.PodStatus) {
	if s == nil {
		return
	}
	for name, f := range a.failedProbes {
		if c := s.FindContainerStatusByName(name); c != nil && c.ID != f.containerID {
			delete(a.failedProbes, name)
		}
	}
	for name, id := range a.startedProbes {
		if c := s.FindContainerStatusByName(name); c != nil && c.ID != id {
			delete(a.startedProbes, name)
		}
	}
}

// restartPod kills the named container (all when none is named) and syncs.
func (a *podActor) restartPod(ctx actor.Context, m *messages.RestartPod) {
	if a.workType != messages.SyncWork || a.pod == nil {
		klog.InfoS("Ignoring restart of a pod that is not running", "podUID", a.uid, "state", a.workType)
		return
	}
	if m.Container == "" {
		a.restartAll = true
	} else {
		a.restart = append(a.restart, m.Container)
	}
	a.update(ctx, &messages.SyncPod{UpdateType: messages.SyncPodSync, Pod: a.pod, StartTime: a.cfg.Clock.Now()})
}

// describe is the worker's state for operators.
func (a *podActor) describe() *messages.PodWorkerDescription {
	d := &messages.PodWorkerDescription{
		Found: true, UID: a.uid, FullName: a.fullName, WorkType: a.workType, Working: a.working,
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

var _ actor.Actor = &podActor{}
