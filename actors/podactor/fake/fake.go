// Package fake holds test doubles of the runtime manager and the PLEG status
// cache, as the pod actor and the supervisor see them. The runtime records
// every call, can hold a verb until released or canceled, can fail a verb,
// and can panic on demand.
package fake

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/cri"
)

// Verbs of the runtime, as recorded in Call.Op.
const (
	OpSyncPod              = "SyncPod"
	OpKillPod              = "KillPod"
	OpRestartContainer     = "RestartContainer"
	OpGetPodStatus         = "GetPodStatus"
	OpGetPods              = "GetPods"
	OpRemoveDeadContainers = "RemoveDeadContainers"
	OpCleanupPod           = "CleanupPod"
	OpGC                   = "GC"
)

// Call is one recorded runtime call.
type Call struct {
	Op            string
	UID           types.UID
	Pod           *v1.Pod
	Running       *cri.Pod
	ContainerID   string
	ContainerName string
	Grace         *int64
	FailedProbes  map[string]string
	Started       map[string]bool // container IDs whose startup probe succeeded
	Err           error           // what the call returned; set when it returned
	Returned      bool
}

// Runtime is a fake runtime manager. The zero value is not usable: use
// NewRuntime.
type Runtime struct {
	mu       sync.Mutex
	statuses interface {
		Get(types.UID) (*cri.PodStatus, error)
	}
	calls   []Call
	holds   map[string]chan struct{}
	errs    map[string]error
	panics  map[string]int
	phases  map[types.UID]v1.PodPhase
	phase   v1.PodPhase
	pods    []*cri.Pod
	changed chan struct{}
}

// NewRuntime returns a fake whose pods run (ConvertPodStatus reports
// every container running).
func NewRuntime() *Runtime {
	return &Runtime{
		holds: map[string]chan struct{}{}, errs: map[string]error{}, panics: map[string]int{},
		phases: map[types.UID]v1.PodPhase{}, phase: v1.PodRunning,
	}
}

// Hold makes calls of op block until the returned release is called or
// their context ends.
func (r *Runtime) Hold(op string) (release func()) {
	ch := make(chan struct{})
	r.mu.Lock()
	r.holds[op] = ch
	r.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			if r.holds[op] == ch {
				delete(r.holds, op)
			}
			r.mu.Unlock()
			close(ch)
		})
	}
}

// Fail makes calls of op return err (nil: succeed again).
func (r *Runtime) Fail(op string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs[op] = err
}

// Panic makes the next n calls of op panic.
func (r *Runtime) Panic(op string, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.panics[op] = n
}

// SetPhase sets the phase ConvertPodStatus's container states give for
// uid ("" uid: all).
func (r *Runtime) SetPhase(uid types.UID, p v1.PodPhase) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if uid == "" {
		r.phase = p
		return
	}
	r.phases[uid] = p
}

// SetPods sets what GetPods returns.
func (r *Runtime) SetPods(pods ...*cri.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pods = pods
}

// Calls returns the recorded calls of op ("" for all).
func (r *Runtime) Calls(op string) []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Call
	for _, c := range r.calls {
		if op == "" || c.Op == op {
			out = append(out, c)
		}
	}
	return out
}

// Count returns how many calls of op were made.
func (r *Runtime) Count(op string) int { return len(r.Calls(op)) }

// call records c, applies panics, holds and failures, and returns the
// call's error.
func (r *Runtime) call(ctx context.Context, c Call) error {
	r.mu.Lock()
	idx := len(r.calls)
	r.calls = append(r.calls, c)
	hold := r.holds[c.Op]
	err := r.errs[c.Op]
	doPanic := r.panics[c.Op] > 0
	if doPanic {
		r.panics[c.Op]--
	}
	r.mu.Unlock()
	if doPanic {
		panic(fmt.Sprintf("fake runtime: %s panics on demand", c.Op))
	}
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if err == nil {
		err = ctx.Err()
	}
	r.mu.Lock()
	r.calls[idx].Err, r.calls[idx].Returned = err, true
	r.mu.Unlock()
	return err
}

func copyGrace(g *int64) *int64 {
	if g == nil {
		return nil
	}
	v := *g
	return &v
}

// SyncPod records the call.
func (r *Runtime) SyncPod(ctx context.Context, pod *v1.Pod, _ *cri.PodStatus, probes cri.Probes) error {
	fp, started := map[string]string{}, map[string]bool{}
	for k, v := range probes {
		if v.Failed {
			fp[k] = v.Message
		}
		if v.Started {
			started[k] = true
		}
	}
	return r.call(ctx, Call{Op: OpSyncPod, UID: pod.UID, Pod: pod, FailedProbes: fp, Started: started})
}

// KillPod records the call.
func (r *Runtime) KillPod(ctx context.Context, pod *v1.Pod, running *cri.Pod, grace *int64) error {
	c := Call{Op: OpKillPod, Pod: pod, Running: running, Grace: copyGrace(grace)}
	if running != nil {
		c.UID = running.ID
	}
	if pod != nil {
		c.UID = pod.UID
	}
	return r.call(ctx, c)
}

// GetPodStatus records the call and returns the pod's status from the
// runtime view the test set (see UseStatuses), else an empty status.
func (r *Runtime) GetPodStatus(ctx context.Context, uid types.UID, _, _ string) (*cri.PodStatus, error) {
	if err := r.call(ctx, Call{Op: OpGetPodStatus, UID: uid}); err != nil {
		return nil, err
	}
	r.mu.Lock()
	view := r.statuses
	r.mu.Unlock()
	if view != nil {
		if s, err := view.Get(uid); err == nil {
			return s, nil
		}
	}
	return &cri.PodStatus{ID: uid}, nil
}

// UseStatuses makes GetPodStatus answer from view (the fake cache), so the
// runtime and the cache agree as they do for real.
func (r *Runtime) UseStatuses(view interface {
	Get(types.UID) (*cri.PodStatus, error)
}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.statuses = view
}

// RestartContainer records the call.
func (r *Runtime) RestartContainer(ctx context.Context, pod *v1.Pod, containerID, containerName string) error {
	return r.call(ctx, Call{Op: OpRestartContainer, UID: pod.UID, Pod: pod, ContainerID: containerID, ContainerName: containerName})
}

// ConvertPodStatus reports every container of pod in the state that gives
// the configured phase: running (Running), exited 0 (Succeeded, which needs
// a pod whose restartPolicy is not Always), exited 1 (Failed, which needs
// restartPolicy Never), waiting to be created (anything else). The sandbox
// is ready unless the phase is Pending.
func (r *Runtime) ConvertPodStatus(pod *v1.Pod, _ *cri.PodStatus) cri.APIPodStatus {
	r.mu.Lock()
	p, ok := r.phases[pod.UID]
	if !ok {
		p = r.phase
	}
	r.mu.Unlock()
	var state v1.ContainerState
	switch p {
	case v1.PodRunning:
		state.Running = &v1.ContainerStateRunning{}
	case v1.PodSucceeded:
		state.Terminated = &v1.ContainerStateTerminated{Reason: "Completed"}
	case v1.PodFailed:
		state.Terminated = &v1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}
	default:
		state.Waiting = &v1.ContainerStateWaiting{Reason: "ContainerCreating"}
	}
	out := cri.APIPodStatus{SandboxReady: p != v1.PodPending}
	for _, c := range pod.Spec.Containers {
		started := state.Running != nil
		out.Status.ContainerStatuses = append(out.Status.ContainerStatuses,
			v1.ContainerStatus{Name: c.Name, Image: c.Image, State: *state.DeepCopy(), Started: &started})
	}
	return out
}

// GetPods returns the configured runtime pods.
func (r *Runtime) GetPods(ctx context.Context, _ bool) ([]*cri.Pod, error) {
	if err := r.call(ctx, Call{Op: OpGetPods}); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*cri.Pod(nil), r.pods...), nil
}

// RemoveDeadContainers records the call.
func (r *Runtime) RemoveDeadContainers(ctx context.Context, uid types.UID) error {
	return r.call(ctx, Call{Op: OpRemoveDeadContainers, UID: uid})
}

// CleanupPod records the call.
func (r *Runtime) CleanupPod(ctx context.Context, uid types.UID) error {
	return r.call(ctx, Call{Op: OpCleanupPod, UID: uid})
}

// GC records the call.
func (r *Runtime) GC() {
	_ = r.call(context.Background(), Call{Op: OpGC})
}

// CleanupOrphanedPodDirs has no directories to remove (not recorded: the
// sweep runs on every housekeeping pass).
func (r *Runtime) CleanupOrphanedPodDirs(context.Context, func(types.UID) bool) (int, error) {
	return 0, nil
}

// ErrNotFound is returned by Cache.Get for a pod without status.
var ErrNotFound = errors.New("fake cache: no status for pod")

// Cache is a fake PLEG status cache that is always fresh: GetNewerThan
// answers at once with a status stamped just after minTime, unless held.
type Cache struct {
	mu       sync.Mutex
	statuses map[types.UID]*cri.PodStatus
	hold     chan struct{}
	minTimes map[types.UID][]time.Time
	observed map[types.UID][]*cri.PodStatus
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{statuses: map[types.UID]*cri.PodStatus{}, minTimes: map[types.UID][]time.Time{}, observed: map[types.UID][]*cri.PodStatus{}}
}

// Set stores the runtime status of a pod.
func (c *Cache) Set(s *cri.PodStatus) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.statuses[s.ID] = s
}

// Observed records a status a sync read itself; the fake's answers stay
// those given to Set. ObservedStatuses returns them.
func (c *Cache) Observed(uid types.UID, status *cri.PodStatus, _ time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.observed[uid] = append(c.observed[uid], status)
}

// ObservedStatuses returns the statuses syncs recorded for uid, in order.
func (c *Cache) ObservedStatuses(uid types.UID) []*cri.PodStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*cri.PodStatus(nil), c.observed[uid]...)
}

// Hold makes GetNewerThan block until release or its context ends.
func (c *Cache) Hold() (release func()) {
	ch := make(chan struct{})
	c.mu.Lock()
	c.hold = ch
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			c.hold = nil
			c.mu.Unlock()
			close(ch)
		})
	}
}

// MinTimes returns the minTime arguments GetNewerThan saw for uid.
func (c *Cache) MinTimes(uid types.UID) []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.minTimes[uid]...)
}

// GetNewerThan returns the pod's status stamped after minTime.
func (c *Cache) GetNewerThan(ctx context.Context, uid types.UID, minTime time.Time) (*cri.PodStatus, error) {
	c.mu.Lock()
	c.minTimes[uid] = append(c.minTimes[uid], minTime)
	hold := c.hold
	c.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := &cri.PodStatus{ID: uid}
	if s := c.statuses[uid]; s != nil {
		cp := *s
		out = &cp
	}
	out.TimeStamp = minTime.Add(time.Nanosecond)
	return out, nil
}

// Get returns the stored status or ErrNotFound.
func (c *Cache) Get(uid types.UID) (*cri.PodStatus, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.statuses[uid]
	if s == nil {
		return nil, ErrNotFound
	}
	cp := *s
	return &cp, nil
}
