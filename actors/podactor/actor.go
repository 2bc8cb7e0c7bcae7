package podactor

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages"
)

// probeFailure is a liveness or startup failure of one container instance.
type probeFailure struct {
	containerID string
	message     string
	startup     bool // the startup probe failed (else liveness)
}

// podActor is the worker of one pod UID. Its fields are touched only from
// Receive.
type podActor struct {
	cfg         Config
	uid         types.UID
	incarnation int64 // 1 for the first start, more after supervision restarts
	behavior    actor.Behavior

	workType messages.PodWorkType
	finished bool
	seen     bool // an update was handled

	pod        *v1.Pod  // latest desired pod
	runningPod *cri.Pod // set for an orphan
	fullName   string
	static     bool

	working  bool
	workID   uint64
	workKind workKind
	cancel   context.CancelFunc
	pending  *messages.SyncPod

	kill             *messages.KillOptions // the kill that started termination
	grace            *int64                // effective grace period once terminating
	inflightGrace    int64                 // grace period of the kill in flight
	restartRequested bool

	failedProbes map[string]probeFailure // by container name
	// startedProbes: container name → the instance whose startup probe
	// succeeded (a sidecar with a startup probe holds back the next
	// container until then).
	startedProbes map[string]string
	restart       []string
	restartAll    bool

	firstSync     time.Time     // the first sync of this worker
	deadline      deadlineTimer // activeDeadlineSeconds
	lastSyncTime  time.Time
	lastSyncError string
	lastPhase     v1.PodPhase
	lastStatus    *v1.PodStatus // the last status reported, nil before the first
	final         *v1.PodStatus // the final status, once finished (nil for an orphan)
	nextSyncTime  time.Time
	actorRestarts int

	retry       retryTimer // the end of a back-off the pod waits on
	readRuntime bool       // the next sync reads the runtime (a back-off ended)
	// stopWaiting makes the sync in flight, while it still waits for the
	// PLEG cache, read the runtime instead.
	stopWaiting context.CancelFunc
}

// Props returns the props of the pod actor for uid. Every incarnation
// produced from the same props after the first is a supervision restart.
func Props(cfg Config, uid types.UID) (*actor.Props, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if uid == "" {
		return nil, fmt.Errorf("podactor props: field uid is required")
	}
	cfg = cfg.withDefaults()
	var incarnations atomic.Int64
	return actor.PropsFromProducer(func() actor.Actor {
		a := &podActor{cfg: cfg, uid: uid, incarnation: incarnations.Add(1), behavior: actor.NewBehavior(), failedProbes: map[string]probeFailure{}, startedProbes: map[string]string{}}
		a.actorRestarts = int(a.incarnation - 1)
		a.behavior.Become(a.syncing)
		return a
	}), nil
}

// Receive dispatches to the current state's behaviour.
func (a *podActor) Receive(ctx actor.Context) {
	a.behavior.Receive(ctx)
}

// syncing is the Sync state: containers are (to be) running.
func (a *podActor) syncing(ctx actor.Context) {
	if a.common(ctx) {
		return
	}
	switch m := ctx.Message().(type) {
	case *messages.SyncPod:
		a.update(ctx, m)
	case *retryDue:
		a.retryNow(ctx, m)
	case *workDone:
		if a.accept(m) {
			a.syncDone(ctx, m)
		}
	}
}

// terminating is the Terminating state: every update is a kill.
func (a *podActor) terminating(ctx actor.Context) {
	if a.common(ctx) {
		return
	}
	switch m := ctx.Message().(type) {
	case *messages.SyncPod:
		a.update(ctx, m)
	case *workDone:
		if !a.accept(m) {
			return
		}
		if m.kind == workSync { // a sync canceled by termination: not reported
			a.lastSyncTime = a.cfg.Clock.Now()
			a.startNext(ctx)
			return
		}
		a.killDone(ctx, m)
	}
}

// terminated is the Terminated state: the final status is being derived;
// updates only record a restart request.
func (a *podActor) terminated(ctx actor.Context) {
	if a.common(ctx) {
		return
	}
	switch m := ctx.Message().(type) {
	case *messages.SyncPod:
		a.update(ctx, m)
	case *workDone:
		if a.accept(m) {
			a.terminatedDone(ctx, m)
		}
	}
}

// done is the finished state: nothing of the pod runs again, but a later
// update that matters is still taken (updateFinished) until the supervisor
// stops the actor.
func (a *podActor) done(ctx actor.Context) {
	if a.common(ctx) {
		return
	}
	if m, ok := ctx.Message().(*messages.SyncPod); ok {
		a.updateFinished(ctx, m)
	}
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
		if !a.restartRequested {
			a.restartRequested = true
			a.notifyState(ctx)
		}
		return
	}
	if u.Pod == nil || a.pod == nil || a.final == nil || apiequality.Semantic.DeepEqual(u.Pod.ObjectMeta, a.pod.ObjectMeta) {
		klog.V(4).InfoS("Ignoring update for finished pod worker", "podUID", a.uid, "update", u.String())
		return
	}
	a.record(u)
	klog.V(2).InfoS("Finished pod changed, publishing it with its final status", "pod", klog.KObj(a.pod), "podUID", a.uid,
		"deleting", a.pod.DeletionTimestamp != nil, "phase", a.final.Phase)
	ctx.Send(ctx.Parent(), &messages.PodStatusComputed{Pod: a.pod, Status: *a.final})
}

// common handles what every state handles alike; it reports whether the
// message was handled.
func (a *podActor) common(ctx actor.Context) bool {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		if a.incarnation > 1 {
			// Restarted by supervision: memory is gone, ask for the desired pod.
			ctx.Request(ctx.Parent(), &messages.GetDesiredPod{UID: a.uid})
		}
	case *actor.Restarting, *actor.Stopping:
		a.cancelWork()
		a.retry.disarm()
		a.deadline.stop()
	case *deadlineExceeded:
		a.onDeadline(ctx, m)
	case *messages.DesiredPod:
		a.actorRestarts = m.ActorRestarts
		if !m.Found {
			ctx.Stop(ctx.Self())
			return true
		}
		u := m.Update
		a.update(ctx, &u)
	case *messages.ProbeResultChanged:
		a.probeResult(ctx, m)
	case *messages.RestartPod:
		a.restartPod(ctx, m)
	case *messages.DescribePodWorker:
		ctx.Respond(a.describe())
	default:
		return false
	}
	return true
}

// accept reports whether a work result is the one in flight, and if so
// clears the in-flight marks. A result that panicked is re-raised.
func (a *podActor) accept(m *workDone) bool {
	if !a.working || m.id != a.workID {
		return false
	}
	a.working, a.cancel, a.stopWaiting = false, nil, nil
	if m.panicked != nil {
		panic(fmt.Sprintf("pod worker %s: %s work panicked: %v", a.uid, m.kind, m.panicked))
	}
	return true
}

// cancelWork cancels the work in flight, if any.
func (a *podActor) cancelWork() {
	if a.cancel != nil {
		a.cancel()
	}
}
