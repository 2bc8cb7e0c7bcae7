package supervisor

import (
	"context"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/actors/actorutil"
	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages"
)

// housekeepingDone is the result of a housekeeping pass's runtime calls.
type housekeepingDone struct {
	listed  bool
	running []*cri.Pod
	errs    []error
}

// garbageCollected says a runtime GC (dead containers and sandboxes, pod
// cgroups) started by housekeeping returned.
type garbageCollected struct{}

// podDirsSwept is the outcome of a sweep of orphaned pod directories.
type podDirsSwept struct {
	removed int
	err     error
}

// housekeep purges finished workers, respawns failed ones and starts the
// runtime part of the pass in goroutines: the orphan listing, and the
// runtime's GC apart from it, so a slow GC never holds the kill of an
// orphan (at most one GC runs at a time).
// Nothing is killed before sources are ready.
func (s *supervisor) housekeep(ctx actor.Context) {
	if s.housekeeping {
		klog.V(4).InfoS("Housekeeping still running, skipping this tick")
		return
	}
	for _, w := range s.workers {
		if s.purgeFinished(ctx, w) {
			continue
		}
		if w.actor == actorFailed && !s.cfg.Clock.Now().Before(w.failedAt.Add(s.cfg.WorkerRespawnDelay)) {
			s.respawn(ctx, w)
		}
	}
	s.respawnLostChildren(ctx)
	s.housekeeping = true
	hctx, cancel := context.WithCancel(s.life)
	s.cancel = cancel
	rt, list := s.cfg.Runtime, s.sourcesReady
	actorutil.Go(actorutil.To(ctx), func() any {
		defer cancel()
		res := &housekeepingDone{listed: list}
		if list {
			pods, err := rt.GetPods(hctx, false)
			if err != nil {
				res.errs = append(res.errs, fmt.Errorf("list runtime pods: %w", err))
				res.listed = false
			}
			res.running = pods
		}
		return res
	})
	if !s.collecting {
		s.collecting = true
		actorutil.Go(actorutil.To(ctx), func() any {
			rt.GC()
			return &garbageCollected{}
		})
	}
}

// housekeepingDone kills orphans: runtime pods no source wants and no worker
// handles.
func (s *supervisor) housekeepingDone(ctx actor.Context, m *housekeepingDone) {
	s.housekeeping = false
	for _, err := range m.errs {
		klog.ErrorS(err, "Housekeeping failed")
	}
	if !m.listed || !s.sourcesReady {
		return
	}
	for _, rp := range m.running {
		if s.pods[rp.ID] != nil || s.workers[rp.ID] != nil {
			continue
		}
		klog.InfoS("Killing orphaned pod no source wants", "pod", klog.KRef(rp.Namespace, rp.Name), "podUID", rp.ID)
		s.dispatch(ctx, rp.ID, messages.SyncPod{UpdateType: messages.SyncPodKill, RunningPod: rp, StartTime: s.cfg.Clock.Now()})
	}
	s.sweepPodDirs(ctx, m.running)
}

// sweepPodDirs starts a sweep of the directories of pods no source wants,
// no worker handles and the runtime does not run (one at a time, off the
// loop). A pod added meanwhile is safe: the runtime manager never removes
// the directory of a pod it synced since the agent started.
func (s *supervisor) sweepPodDirs(ctx actor.Context, running []*cri.Pod) {
	if s.sweepingDirs {
		return
	}
	keep := map[types.UID]bool{}
	for uid := range s.pods {
		keep[uid] = true
	}
	for uid := range s.workers {
		keep[uid] = true
	}
	for uid := range s.cleaning {
		keep[uid] = true
	}
	for _, rp := range running {
		keep[rp.ID] = true
	}
	s.sweepingDirs = true
	rt, life := s.cfg.Runtime, s.life
	actorutil.Go(actorutil.To(ctx), func() any {
		n, err := rt.CleanupOrphanedPodDirs(life, func(uid types.UID) bool { return keep[uid] })
		return &podDirsSwept{removed: n, err: err}
	})
}

// cleanupParallelism is how many removed pods are cleaned up at once. The
// runtime's own bound (cri.Limit under the runtime manager) shapes the CRI
// calls; this keeps a mass deletion from starting a goroutine per pod.
const cleanupParallelism = 16

// podCleanedUp is the result of one removed pod's cleanup.
type podCleanedUp struct {
	uid types.UID
	err error
}

// purgeFinished purges a finished worker that nothing keeps, and reports
// whether it did: its pod was removed (purgeRemoved) or added again
// (restartRequested: the worker is stopped, the status and prober actors
// forget the UID, and the pod is started afresh once the worker is gone). A finished pod that is still desired keeps its worker and its
// terminal status (an evicted or completed pod) until then.
func (s *supervisor) purgeFinished(ctx actor.Context, w *worker) bool {
	if !w.report.Finished || w.actor == actorPurging {
		return false
	}
	switch {
	case s.pods[w.uid] == nil:
		s.purgeRemoved(ctx, w)
	case w.report.RestartRequested:
		klog.V(2).InfoS("Purging finished pod worker", "podUID", w.uid, "fullName", w.report.FullName)
		w.purge()
		ctx.Stop(w.pid)
		// The pod starts a new life: its terminal status and probe results
		// are the old worker's, and a terminal phase would otherwise stick.
		s.tell(ctx, &messages.PodForgotten{UID: w.uid}, s.status, s.prober)
	default:
		return false
	}
	return true
}

// purgeRemoved stops the finished worker of a pod no source wants, makes
// the status and prober actors forget it, and removes what the runtime keeps
// of it (sandboxes, dead containers, volumes, logs) at once: a deleted pod's
// sandbox is gone as soon as its kill is done, not at the next housekeeping
// pass (deleting 100 pods on containerd took 16 s when every cleanup waited
// for housekeeping and ran one after another).
func (s *supervisor) purgeRemoved(ctx actor.Context, w *worker) {
	klog.V(2).InfoS("Purging finished pod worker", "podUID", w.uid, "fullName", w.report.FullName)
	w.purge()
	ctx.Stop(w.pid)
	s.tell(ctx, &messages.PodForgotten{UID: w.uid}, s.status, s.prober)
	s.cleaning[w.uid] = true
	rt, life, sem, uid := s.cfg.Runtime, s.life, s.cleanupSem, w.uid
	actorutil.Go(actorutil.To(ctx), func() any {
		select {
		case sem <- struct{}{}:
		case <-life.Done():
			return &podCleanedUp{uid: uid, err: life.Err()}
		}
		defer func() { <-sem }()
		return &podCleanedUp{uid: uid, err: rt.CleanupPod(life, uid)}
	})
}

// podCleanedUp logs a failed cleanup (the runtime's garbage collection and
// the orphan sweep of housekeeping catch what it left) and starts the pod
// if it was added again meanwhile.
func (s *supervisor) podCleanedUp(ctx actor.Context, m *podCleanedUp) {
	delete(s.cleaning, m.uid)
	if m.err != nil && s.life.Err() == nil {
		klog.ErrorS(m.err, "Cleaning up a removed pod failed", "podUID", m.uid)
	}
	s.startReadded(ctx, m.uid)
}
