package supervisor

import (
	"context"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/actors/actorutil"
	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages"
)

// desiredPod is a pod some source wants.
type desiredPod struct {
	pod      *v1.Pod
	source   string
	rejected bool       // admission refused it: never run
	why      *rejection // why, when rejected
	done     bool       // its worker finished and was purged: not run again
	readded  bool       // added again while its worker was stopping
}

// supervisor is the sync loop actor. Its fields are touched only from
// Receive.
type supervisor struct {
	cfg  Config
	node node
	// usage is what active pods take of the node, for admission: kept up
	// to date as pods are admitted, nil (rebuilt on next use) after any
	// other change of which pods are active.
	usage *usage

	pods    map[types.UID]*desiredPod
	workers map[types.UID]*worker
	byPID   map[string]types.UID // pod actor PID id → UID
	static  staticPods

	sourcesReady   bool
	housekeeping   bool               // a housekeeping pass is in flight
	collecting     bool               // a runtime GC started by housekeeping is in flight
	sweepingDirs   bool               // a sweep of orphaned pod directories is in flight
	cancel         context.CancelFunc // cancels the housekeeping pass in flight
	life           context.Context    // ends when the loop stops
	cleanupSem     chan struct{}      // bounds the cleanups of removed pods in flight
	cleaning       map[types.UID]bool // removed pods whose cleanup is in flight
	endLife        context.CancelFunc
	stopTicks      chan struct{}
	runtimeReady   bool
	runtimeMessage string
	plegHealthy    bool
	plegMessage    string
	imageGCRunning bool // an image collection is in flight

	pleg, prober, status *actor.PID
	eviction             *actor.PID      // the eviction manager, when configured
	lostChildren         map[string]bool // fixed children to respawn, by name
	stopping             bool            // the loop itself is stopping

	shutdown *nodeShutdown // a graceful node shutdown, once started
}

// internal ticks.
type (
	syncTick         struct{}
	housekeepingTick struct{}
)

// Props returns the props of the sync loop, or the error naming what is
// wrong with cfg.
func Props(cfg Config) (*actor.Props, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return actor.PropsFromProducer(func() actor.Actor {
		return &supervisor{
			cfg: cfg, node: node{labels: cfg.NodeLabels, allocatable: cfg.Allocatable, maxPods: cfg.MaxPods, runtime: cfg.Admit},
			pods: map[types.UID]*desiredPod{}, workers: map[types.UID]*worker{}, byPID: map[string]types.UID{},
			static: newStaticPods(), plegHealthy: true, runtimeMessage: "runtime status not reported yet",
			lostChildren: map[string]bool{}, cancel: func() {}, life: context.Background(), endLife: func() {},
			cleanupSem: make(chan struct{}, cleanupParallelism), cleaning: map[types.UID]bool{},
		}
	}, actor.WithSupervisor(newRestartStrategy(cfg))), nil
}

// Receive is the sync loop's select.
func (s *supervisor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		s.start(ctx)
	case *actor.Stopping, *actor.Restarting:
		// On a restart too: the children are stopped with the old
		// incarnation.
		s.stopping = true
		s.cancel()
		s.endLife()
		if s.stopTicks != nil {
			close(s.stopTicks)
			s.stopTicks = nil
		}
	case *actor.Terminated:
		if !s.stopping {
			s.childTerminated(ctx, m.Who)
		}
	case *childFailed:
		s.childFailed(m)

	case *messages.PodUpdate:
		s.podUpdate(ctx, m)
	case *messages.SourcesReady:
		if !s.sourcesReady {
			klog.InfoS("All pod sources are ready", "sources", m.Sources)
		}
		s.sourcesReady = true
	case *messages.PodLifecycleEvent:
		s.lifecycleEvent(ctx, m)
	case *messages.ProbeResultChanged:
		s.probeResult(ctx, m)
	case *messages.TerminatePod:
		s.terminatePod(ctx, m)
	case *messages.ObjectChanged:
		s.objectChanged(ctx, m)
	case *messages.StartNodeShutdown:
		s.startNodeShutdown(ctx, m)
	case *messages.CancelNodeShutdown:
		s.cancelNodeShutdown(ctx)
	case *shutdownGroupTimedOut:
		s.shutdownGroupTimeout(ctx, m)
	case *messages.RestartPod:
		if w := s.liveWorker(m.UID); w != nil {
			ctx.Send(w.pid, m)
		}

	case *messages.PodSyncCompleted:
		s.syncCompleted(ctx, m)
	case *messages.PodWorkerStateChanged:
		s.workerStateChanged(ctx, m)
	case *messages.PodStatusComputed:
		// Status is published only for pods a source still wants: the final
		// status of a removed pod (or one from a worker already purged)
		// would bring the pod back into view after its removal.
		if w := s.workers[m.Pod.UID]; w != nil && w.actor != actorPurging && s.pods[m.Pod.UID] != nil {
			s.tell(ctx, m, s.status, s.prober)
		}
	case *messages.GetDesiredPod:
		if w := s.workers[m.UID]; w != nil {
			w.restarted() // it asks once restarted
		}
		ctx.Respond(s.desiredFor(m.UID))

	case *messages.DescribePodWorker:
		s.describe(ctx, m)
	case *messages.GetNodeConditions:
		ctx.Respond(s.nodeConditions())
	case *messages.RelistHealthChanged:
		s.plegHealthy, s.plegMessage = m.Healthy, m.Message
	case *messages.RuntimeHealthChanged:
		s.runtimeReady, s.runtimeMessage = m.Ready, m.Message
	case *messages.NodePressureChanged:
		// New pods are admitted against the pressure (actors/eviction.Admit).
		s.node.pressure = m.Conditions
	case *messages.NodeLabelsChanged:
		// New pods are admitted against the new labels; admitted ones keep
		// running (IgnoredDuringExecution), rejected ones stay rejected.
		s.node.labels = m.Labels
		klog.V(2).InfoS("Node labels changed", "labels", m.Labels)

	case *syncTick:
		s.syncDue(ctx)
	case *housekeepingTick:
		s.housekeep(ctx)
	case *housekeepingDone:
		s.housekeepingDone(ctx, m)
	case *garbageCollected:
		s.collecting = false
	case *podDirsSwept:
		s.sweepingDirs = false
		if m.err != nil && s.life.Err() == nil {
			klog.ErrorS(m.err, "Sweeping orphaned pod directories failed", "removed", m.removed)
		}
	case *imageGCTick:
		s.collectImages(ctx)
	case *imageGCDone:
		s.imageGCDone(m)
	case *podCleanedUp:
		s.podCleanedUp(ctx, m)
	case *deadContainersRemoved:
		if m.err != nil {
			klog.ErrorS(m.err, "Failed to remove dead containers", "podUID", m.uid)
		}
	}
}

// start spawns the core children and the tick loop.
func (s *supervisor) start(ctx actor.Context) {
	s.life, s.endLife = context.WithCancel(context.Background())
	s.spawnCoreChildren(ctx)
	s.stopTicks = make(chan struct{})
	actorutil.Tick(s.cfg.Clock, s.cfg.SyncPeriod, actorutil.To(ctx), &syncTick{}, s.stopTicks)
	actorutil.Tick(s.cfg.Clock, s.cfg.HousekeepingPeriod, actorutil.To(ctx), &housekeepingTick{}, s.stopTicks)
	if s.cfg.ImageGC != nil {
		// A first collection at once (as the kubelet's wait.Until), then
		// every period.
		ctx.Send(ctx.Self(), &imageGCTick{})
		actorutil.Tick(s.cfg.Clock, s.cfg.ImageGCPeriod, actorutil.To(ctx), &imageGCTick{}, s.stopTicks)
	}
}

// tell sends m to every non-nil pid.
func (s *supervisor) tell(ctx actor.Context, m any, pids ...*actor.PID) {
	for _, p := range pids {
		if p != nil {
			ctx.Send(p, m)
		}
	}
}

// probeResult forwards every result to the status child and liveness and
// startup results to the pod actor, which syncs on a failure.
func (s *supervisor) probeResult(ctx actor.Context, m *messages.ProbeResultChanged) {
	s.tell(ctx, m, s.status)
	if m.Kind == messages.Readiness {
		return
	}
	if w := s.liveWorker(m.PodUID); w != nil {
		ctx.Send(w.pid, m)
	}
}

// lifecycleEvent syncs a known pod; a dead or started container also
// triggers removal of the pod's dead containers and sandboxes (a start may
// follow a replaced sandbox, e.g. one an agent killed mid-creation left
// not ready, which no container death would ever collect).
func (s *supervisor) lifecycleEvent(ctx actor.Context, m *messages.PodLifecycleEvent) {
	if d := s.pods[m.PodUID]; d != nil && !d.rejected && !d.done {
		if w := s.liveWorker(m.PodUID); w != nil {
			s.dispatch(ctx, m.PodUID, messages.SyncPod{UpdateType: messages.SyncPodSync, Pod: d.pod, StartTime: s.cfg.Clock.Now()})
		}
	}
	collect := (m.Type == messages.ContainerDied && !s.cleanedAfterKill(m.PodUID)) ||
		(m.Type == messages.ContainerStarted && s.mayHaveDead(m.PodUID))
	if collect {
		rt, uid, life := s.cfg.Runtime, m.PodUID, s.life
		actorutil.Go(actorutil.To(ctx), func() any {
			return &deadContainersRemoved{uid: uid, err: rt.RemoveDeadContainers(life, uid)}
		})
	}
}

// mayHaveDead reports whether a pod whose container started may have dead
// containers or sandboxes to collect: unless the PLEG cache (which holds
// the pod's status as of the event before the event is sent) shows exactly
// one sandbox and only running containers. At a pod's first start that saves
// the two list calls of RemoveDeadContainers; a replaced sandbox still
// shows as a second one.
func (s *supervisor) mayHaveDead(uid types.UID) bool {
	if s.cfg.Cache == nil {
		return true
	}
	st, err := s.cfg.Cache.Get(uid)
	if err != nil || st == nil || len(st.SandboxStatuses) != 1 {
		return true
	}
	for _, c := range st.ContainerStatuses {
		if c.State != cri.ContainerStateRunning {
			return true
		}
	}
	return false
}

// cleanedAfterKill reports whether a pod is being killed for good: no
// source wants it and its worker still runs, so once the kill is done
// purgeRemoved's CleanupPod removes every container and sandbox of it, and
// collecting its dead containers on each death of the kill (two list calls
// per pod at a 100-pod delete) would do part of that work twice.
func (s *supervisor) cleanedAfterKill(uid types.UID) bool {
	return s.pods[uid] == nil && s.workers[uid] != nil
}

// deadContainersRemoved is the result of RemoveDeadContainers.
type deadContainersRemoved struct {
	uid types.UID
	err error
}

// terminatePod is an operator's kill or eviction.
func (s *supervisor) terminatePod(ctx actor.Context, m *messages.TerminatePod) {
	w := s.liveWorker(m.UID)
	if w == nil {
		klog.InfoS("No running worker to terminate", "podUID", m.UID)
		return
	}
	u := w.last
	u.UpdateType = messages.SyncPodKill
	u.StartTime = s.cfg.Clock.Now()
	opts := m.Options
	u.KillOptions = &opts
	if d := s.pods[m.UID]; d != nil {
		u.Pod = d.pod
	}
	s.dispatch(ctx, m.UID, u)
}

// nodeConditions answers GetNodeConditions.
func (s *supervisor) nodeConditions() *messages.NodeConditions {
	nc := &messages.NodeConditions{RuntimeReady: s.runtimeReady, RuntimeMessage: s.runtimeMessage,
		PLEGHealthy: s.plegHealthy, PLEGMessage: s.plegMessage, Pods: s.activePods(), ShuttingDown: s.node.shuttingDown,
		Pressure: append([]v1.NodeConditionType(nil), s.node.pressure...), Terminated: s.terminatedPods()}
	for _, w := range s.workers {
		if !w.workDone() && w.actor != actorFailed {
			nc.RunningPods++
		}
	}
	return nc
}

var _ actor.Actor = &supervisor{}
