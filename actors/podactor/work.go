package podactor

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages/podrules"
)

// workKind is what a unit of work does; it follows the actor's state.
type workKind int

const (
	workSync       workKind = iota // Sync: SyncPod
	workKill                       // Terminating: KillPod
	workTerminated                 // Terminated: final status
)

func (k workKind) String() string {
	return [...]string{"sync", "kill", "terminated"}[k]
}

// workIDs numbers units of work across all actors and incarnations, so a
// result from before a supervision restart is never taken for a current one.
var workIDs atomic.Uint64

// workDone is the result of a unit of work, sent by its goroutine to the
// actor.
type workDone struct {
	id      uint64
	kind    workKind
	started time.Time
	// acting is when fresh status arrived and the runtime work began: the
	// worker duration metric counts from here, like the kubelet's, which
	// excludes the wait for PLEG.
	acting    time.Time
	status    *cri.PodStatus    // runtime status the work acted on
	apiStatus *cri.APIPodStatus // generated status, nil when none was computed
	terminal  bool              // sync only: the generated phase is terminal
	err       error
	panicked  any // the work panicked with this value
}

// syncJob is the input of a sync, copied out of the actor.
type syncJob struct {
	uid        types.UID
	pod        *v1.Pod
	minTime    time.Time
	probes     cri.Probes
	restart    []string // container names to restart first
	restartAll bool
	// readRuntime reads the pod's status from the runtime instead of
	// waiting for the PLEG cache: a back-off's end is no runtime event, and
	// in evented mode the cache only moves on at the next freshness tick
	// (up to a relist period later).
	readRuntime bool
	// readNow ends a wait for the PLEG cache early: the sync reads the
	// runtime instead (a back-off ended while the sync was waiting).
	readNow context.Context
}

// runSync waits for fresh status, restarts requested containers, derives the
// API status and, unless the pod is terminal, syncs the runtime.
func runSync(ctx context.Context, cfg Config, j syncJob) (r workDone) {
	status, err := syncStatus(ctx, cfg, j)
	if err != nil {
		r.err = err
		return r
	}
	r.acting = cfg.Clock.Now()
	if j.restartAll || len(j.restart) > 0 {
		killedAt := cfg.Clock.Now()
		if err := restartContainers(ctx, cfg.Runtime, j, status); err != nil {
			r.err = err
			return r
		}
		if status, err = cfg.Cache.GetNewerThan(ctx, j.uid, killedAt); err != nil {
			r.err = fmt.Errorf("wait for status of pod %q after restart: %w", j.uid, err)
			return r
		}
	}
	r.status = status
	r.apiStatus = apiStatus(cfg.Runtime, j.pod, status)
	if podrules.IsTerminal(r.apiStatus.Status.Phase) {
		r.terminal = true
		return r
	}
	if err := cfg.Runtime.SyncPod(ctx, j.pod, status, j.probes); err != nil {
		r.err = fmt.Errorf("sync pod %q: %w", j.uid, err)
	}
	if !steady(j.pod, r.apiStatus.Status) && ctx.Err() == nil {
		// The sync likely changed the pod (started a sandbox or containers,
		// or hit a back-off): report what the runtime has now rather than
		// the status from before the sync, which PLEG would only correct
		// on its next relist. The read goes into the PLEG cache, stamped
		// with its start (after the sync's changes): PLEG's relist finds it
		// there and does not read the pod again for the changes it lists
		// (a later inspection of its own overrides it). The next sync still
		// waits for status newer than this sync's end.
		readAt := cfg.Clock.Now()
		if fresh, err := cfg.Runtime.GetPodStatus(ctx, j.uid, j.pod.Name, j.pod.Namespace); err == nil {
			cfg.Cache.Observed(j.uid, fresh, readAt)
			r.status = fresh
			r.apiStatus = apiStatus(cfg.Runtime, j.pod, fresh)
		}
	}
	return r
}

// syncStatus is the runtime status a sync acts on: the PLEG cache's once it
// is newer than minTime, or the runtime's own when the job asks for it or
// j.readNow ends the wait first.
func syncStatus(ctx context.Context, cfg Config, j syncJob) (*cri.PodStatus, error) {
	if !j.readRuntime {
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if j.readNow != nil {
			defer context.AfterFunc(j.readNow, cancel)()
		}
		status, err := cfg.Cache.GetNewerThan(wctx, j.uid, j.minTime)
		if err == nil {
			return status, nil
		}
		if ctx.Err() != nil || j.readNow == nil || j.readNow.Err() == nil {
			return nil, fmt.Errorf("wait for status of pod %q newer than %s: %w", j.uid, j.minTime.Format(time.RFC3339Nano), err)
		}
	}
	status, err := cfg.Runtime.GetPodStatus(ctx, j.uid, j.pod.Name, j.pod.Namespace)
	if err != nil {
		return nil, fmt.Errorf("read status of pod %q from the runtime: %w", j.uid, err)
	}
	return status, nil
}

// steady reports whether every container of the pod was running before the
// sync: a sync then usually changes nothing, and its status stands.
func steady(pod *v1.Pod, api v1.PodStatus) bool {
	if api.Phase != v1.PodRunning || len(api.ContainerStatuses) != len(pod.Spec.Containers) {
		return false
	}
	for _, cs := range api.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	return true
}

// restartContainers kills the running containers a RestartPod named; the
// sync that follows starts them again.
func restartContainers(ctx context.Context, rt Runtime, j syncJob, status *cri.PodStatus) error {
	want := map[string]bool{}
	for _, n := range j.restart {
		want[n] = true
	}
	for _, c := range status.RunningContainers() {
		if !j.restartAll && !want[c.Name] {
			continue
		}
		if err := rt.RestartContainer(ctx, j.pod, c.ID, c.Name); err != nil {
			return fmt.Errorf("restart container %q (%s): %w", c.Name, c.ID, err)
		}
	}
	return nil
}

// killJob is the input of a kill.
type killJob struct {
	uid     types.UID
	pod     *v1.Pod  // nil for an orphan
	orphan  *cri.Pod // set for an orphan
	minTime time.Time
	grace   int64
}

// runKill stops every container of the pod with the grace period.
func runKill(ctx context.Context, cfg Config, j killJob) (r workDone) {
	running := j.orphan
	if j.pod != nil {
		status, err := cfg.Cache.GetNewerThan(ctx, j.uid, j.minTime)
		if err != nil {
			r.err = fmt.Errorf("wait for status of pod %q newer than %s: %w", j.uid, j.minTime.Format(time.RFC3339Nano), err)
			return r
		}
		r.status = status
		running = runningPod(status)
	}
	r.acting = cfg.Clock.Now()
	grace := j.grace
	if err := cfg.Runtime.KillPod(ctx, j.pod, running, &grace); err != nil {
		r.err = fmt.Errorf("kill pod %q with grace period %ds: %w", j.uid, grace, err)
	}
	return r
}

// runTerminated derives the final status of a stopped pod. After a kill
// (killed) it reads the runtime now: the kill changed it, and the PLEG
// cache would only show that once its inspection of the exits, or its next
// freshness tick, is newer than the kill's end (up to a relist period, on
// every deleted pod's way to cleanup); the cache is the fallback when the
// read fails. A pod terminal on first sight uses the cache.
func runTerminated(ctx context.Context, cfg Config, uid types.UID, pod *v1.Pod, minTime time.Time, killed bool) (r workDone) {
	if pod == nil {
		return r // an orphan has no API status
	}
	var status *cri.PodStatus
	var err error
	if killed {
		status, err = cfg.Runtime.GetPodStatus(ctx, uid, pod.Name, pod.Namespace)
	}
	if !killed || err != nil {
		if status, err = cfg.Cache.GetNewerThan(ctx, uid, minTime); err != nil {
			r.err = fmt.Errorf("wait for final status of pod %q: %w", uid, err)
			return r
		}
	}
	r.acting = cfg.Clock.Now()
	r.status = status
	r.apiStatus = apiStatus(cfg.Runtime, pod, status)
	return r
}

// apiStatus is what the runtime manager reads of pod from status, with the
// phase derived from its containers (podrules.PodPhase, the kubelet's
// getPhase): the pod actor needs it at once to tell a terminal pod.
func apiStatus(rt Runtime, pod *v1.Pod, status *cri.PodStatus) *cri.APIPodStatus {
	s := rt.ConvertPodStatus(pod, status)
	s.Status.Phase = podrules.PodPhase(pod, &s.Status)
	return &s
}

// canceled reports a result cut short by its context.
func (r *workDone) canceled() bool {
	return errors.Is(r.err, context.Canceled)
}
