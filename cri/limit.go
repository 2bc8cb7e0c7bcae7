package cri

import (
	"context"
	"fmt"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// Priorities of runtime work under a Limit: a pod that already has its
// sandbox goes first, so pods reach Running one after another instead of
// every pod's sandbox first and every pod's containers last; teardown takes
// what is left.
const (
	prioStart    = iota // CreateContainer, StartContainer
	prioSandbox         // RunPodSandbox
	prioTeardown        // StopPodSandbox, RemovePodSandbox, RemoveContainer
	numPrios
)

// Limit bounds how many of the calls that contend inside the runtime
// (sandbox and container creation, starts and teardown) run at once; n <= 0
// returns rt as it is. Every runtime serializes part of this work (network
// set-up, the shim launch, the metadata store), so past a small concurrency
// more calls in flight only make each slower; below it the runtime idles
// while calls wait. Measured on containerd 1.6 (docs/benchmarks.md), 100
// sandboxes with one container each reach Running in 9.0 s at 8 in flight,
// 13.5 s at 4, and 8.1–12.2 s for raw calls at 16 or all at once (the
// agent's default is 8). Calls that only wait (StopContainer for a grace
// period, PullImage on a registry) or only read are not limited.
func Limit(rt Runtime, n int) Runtime {
	if n <= 0 {
		return rt
	}
	return &limited{Runtime: rt, sem: newPrioritySem(n)}
}

type limited struct {
	Runtime
	sem *prioritySem
}

func (l *limited) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	if err := l.acquire(ctx, prioSandbox, "RunPodSandbox"); err != nil {
		return "", fmt.Errorf("RunPodSandbox: waiting for a runtime slot: %w", err)
	}
	defer l.sem.release()
	return l.Runtime.RunPodSandbox(ctx, config, runtimeHandler)
}

func (l *limited) CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	if err := l.acquire(ctx, prioStart, "CreateContainer"); err != nil {
		return "", fmt.Errorf("CreateContainer: waiting for a runtime slot: %w", err)
	}
	defer l.sem.release()
	return l.Runtime.CreateContainer(ctx, podSandboxID, config, sandboxConfig)
}

func (l *limited) StartContainer(ctx context.Context, containerID string) error {
	return l.do(ctx, prioStart, "StartContainer", func() error { return l.Runtime.StartContainer(ctx, containerID) })
}

func (l *limited) StopPodSandbox(ctx context.Context, podSandboxID string) error {
	return l.do(ctx, prioTeardown, "StopPodSandbox", func() error { return l.Runtime.StopPodSandbox(ctx, podSandboxID) })
}

func (l *limited) RemovePodSandbox(ctx context.Context, podSandboxID string) error {
	return l.do(ctx, prioTeardown, "RemovePodSandbox", func() error { return l.Runtime.RemovePodSandbox(ctx, podSandboxID) })
}

func (l *limited) RemoveContainer(ctx context.Context, containerID string) error {
	return l.do(ctx, prioTeardown, "RemoveContainer", func() error { return l.Runtime.RemoveContainer(ctx, containerID) })
}

func (l *limited) do(ctx context.Context, prio int, verb string, call func() error) error {
	if err := l.acquire(ctx, prio, verb); err != nil {
		return fmt.Errorf("%s: waiting for a runtime slot: %w", verb, err)
	}
	defer l.sem.release()
	return call()
}

// acquire takes a slot for verb, logging the wait at verbosity 6.
func (l *limited) acquire(ctx context.Context, prio int, verb string) error {
	if !klog.V(6).Enabled() {
		return l.sem.acquire(ctx, prio)
	}
	start := time.Now()
	err := l.sem.acquire(ctx, prio)
	klog.V(6).InfoS("Runtime slot", "verb", verb, "waited", time.Since(start))
	return err
}

// prioritySem is a counting semaphore whose waiters are served by priority,
// first come first served within one.
type prioritySem struct {
	mu      sync.Mutex
	free    int
	waiters [numPrios][]chan struct{}
}

func newPrioritySem(n int) *prioritySem { return &prioritySem{free: n} }

func (s *prioritySem) acquire(ctx context.Context, prio int) error {
	s.mu.Lock()
	if s.free > 0 && s.queued() == 0 {
		s.free--
		s.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	s.waiters[prio] = append(s.waiters[prio], ch)
	s.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		select {
		case <-ch:
			// Granted meanwhile: hand the slot on.
			s.grant()
		default:
			s.remove(prio, ch)
		}
		return ctx.Err()
	}
}

func (s *prioritySem) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.grant()
}

// grant gives a free slot to the first waiter of the highest priority, or
// returns it to the pool. s.mu is held.
func (s *prioritySem) grant() {
	for p := range s.waiters {
		if q := s.waiters[p]; len(q) > 0 {
			s.waiters[p] = q[1:]
			close(q[0])
			return
		}
	}
	s.free++
}

func (s *prioritySem) queued() int {
	n := 0
	for _, q := range s.waiters {
		n += len(q)
	}
	return n
}

func (s *prioritySem) remove(prio int, ch chan struct{}) {
	q := s.waiters[prio]
	for i, c := range q {
		if c == ch {
			s.waiters[prio] = append(q[:i:i], q[i+1:]...)
			return
		}
	}
}
