package supervisor

import (
	"context"
	"fmt"
	"sync"

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

// housekeep purges finished workers, respawns failed ones and starts the
// runtime part of the pass (cleanup, orphan listing, GC) in a goroutine.
// Nothing is killed before sources are ready.
func (s *supervisor) housekeep(ctx actor.Context) {
	if s.housekeeping {
		klog.V(4).InfoS("Housekeeping still running, skipping this tick")
		return
	}
	var cleanup []types.UID
	for uid, w := range s.workers {
		switch {
		case w.report.Finished && w.actor != actorPurging && (s.pods[uid] == nil || w.report.RestartRequested):
			// A finished pod that is still desired stays finished, keeping
			// its terminal status (an evicted or completed pod), until its
			// source removes it or re-creates it (restartRequested).
			klog.V(2).InfoS("Purging finished pod worker", "podUID", uid, "fullName", w.report.FullName)
			w.purge()
			ctx.Stop(w.pid)
			if s.pods[uid] == nil {
				s.tell(ctx, &messages.PodForgotten{UID: uid}, s.status, s.prober)
				cleanup = append(cleanup, uid)
			}
		case w.actor == actorFailed && !s.cfg.Clock.Now().Before(w.failedAt.Add(s.cfg.WorkerRespawnDelay)):
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
		res.errs = cleanupPods(hctx, rt, cleanup)
		if list {
			pods, err := rt.GetPods(hctx, false)
			if err != nil {
				res.errs = append(res.errs, fmt.Errorf("list runtime pods: %w", err))
				res.listed = false
			}
			res.running = pods
		}
		rt.GC()
		return res
	})
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
}

// cleanupParallelism is how many purged pods are cleaned up at once. The
// runtime's own bound (cri.Limit under the runtime manager) shapes the CRI
// calls; this only keeps a mass deletion from being removed one pod after
// another (100 pods took 16 s that way on containerd).
const cleanupParallelism = 16

// cleanupPods removes what the runtime keeps of each purged pod, several
// pods at a time, and returns the failures.
func cleanupPods(ctx context.Context, rt Runtime, uids []types.UID) []error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, cleanupParallelism)
	)
	for _, uid := range uids {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := rt.CleanupPod(ctx, uid); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("clean up pod %q: %w", uid, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errs
}
