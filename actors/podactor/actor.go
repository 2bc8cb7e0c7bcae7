package podactor

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages"
)

// podActor is the worker of one pod UID. Its fields are touched only from
// Receive. Its lifecycle is state alone (lifecycle.go); the per-pod concerns
// are parts (parts.go).
type podActor struct {
	cfg         Config
	uid         types.UID
	incarnation int64 // 1 for the first start, more after supervision restarts

	state lifecycle

	pod        *v1.Pod  // latest desired pod
	runningPod *cri.Pod // set for an orphan
	fullName   string
	static     bool

	work    *inflight         // the unit of work in flight, nil when idle
	pending *messages.SyncPod // the coalesced update waiting for it

	kill             *messages.KillOptions // the kill that started termination
	grace            *int64                // effective grace period once terminating
	restartRequested bool                  // the UID was added again while stopping or finished

	deadline activeDeadline  // activeDeadlineSeconds
	retry    backOffRetry    // the end of a back-off the pod waits on
	probes   probeResults    // liveness and startup results that matter to a sync
	restarts restartRequests // an operator's RestartPod

	lastSyncTime  time.Time
	lastSyncError string
	lastPhase     v1.PodPhase
	lastStatus    *cri.APIPodStatus // the last status reported, nil before the first
	final         *cri.APIPodStatus // the final status, once finished (nil for an orphan)
	nextSyncTime  time.Time
	actorRestarts int
}

// inflight is the unit of work in flight.
type inflight struct {
	id     uint64
	kind   workKind
	cancel context.CancelFunc
	grace  int64 // a kill's grace period
	// stopWaiting makes a sync, while it still waits for the PLEG cache,
	// read the runtime instead.
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
		a := &podActor{cfg: cfg, uid: uid, incarnation: incarnations.Add(1), probes: newProbeResults()}
		a.actorRestarts = int(a.incarnation - 1)
		return a
	}), nil
}

// Receive handles one message; what an update does depends on the state
// (update), what a finished unit of work does on its kind (workFinished).
func (a *podActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		if a.incarnation > 1 {
			// Restarted by supervision: memory is gone, ask for the desired pod.
			ctx.Request(ctx.Parent(), &messages.GetDesiredPod{UID: a.uid})
		}
	case *actor.Restarting, *actor.Stopping:
		a.cancelWork()
		for _, p := range a.parts() {
			p.stop()
		}
	case *messages.SyncPod:
		a.update(ctx, m)
	case *messages.DesiredPod:
		a.actorRestarts = m.ActorRestarts
		if !m.Found {
			ctx.Stop(ctx.Self())
			return
		}
		u := m.Update
		a.update(ctx, &u)
	case *workDone:
		a.workFinished(ctx, m)
	case *retryDue:
		a.retryNow(ctx, m)
	case *deadlineExceeded:
		a.onDeadline(ctx, m)
	case *messages.ProbeResultChanged:
		a.probeResult(ctx, m)
	case *messages.RestartPod:
		a.restartPod(ctx, m)
	case *messages.DescribePodWorker:
		ctx.Respond(a.describe())
	}
}

// accept reports whether a work result is the one in flight, and if so
// clears it. A result that panicked is re-raised.
func (a *podActor) accept(m *workDone) bool {
	if a.work == nil || m.id != a.work.id {
		return false
	}
	a.work = nil
	if m.panicked != nil {
		panic(fmt.Sprintf("pod worker %s: %s work panicked: %v", a.uid, m.kind, m.panicked))
	}
	return true
}

// cancelWork cancels the work in flight, if any.
func (a *podActor) cancelWork() {
	if a.work != nil {
		a.work.cancel()
	}
}

var _ actor.Actor = &podActor{}
