package cri

import (
	"context"
	"fmt"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
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

// LimitAdaptive bounds the same calls as Limit, with an in-flight limit that
// g moves by the latency of every call it lets through (g.Max is the cap).
func LimitAdaptive(rt Runtime, g *Gradient) Runtime {
	g.init()
	return &limited{Runtime: rt, sem: newPrioritySem(g.Limit()), gradient: g, clock: g.Clock}
}

type limited struct {
	Runtime
	sem      *prioritySem
	gradient *Gradient // nil: a fixed limit
	clock    clock.PassiveClock
	adapt    sync.Mutex // orders Observe and setLimit of concurrent calls
}

func (l *limited) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	var id string
	err := l.do(ctx, prioSandbox, "RunPodSandbox", func() (err error) {
		id, err = l.Runtime.RunPodSandbox(ctx, config, runtimeHandler)
		return err
	})
	return id, err
}

func (l *limited) CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	var id string
	err := l.do(ctx, prioStart, "CreateContainer", func() (err error) {
		id, err = l.Runtime.CreateContainer(ctx, podSandboxID, config, sandboxConfig)
		return err
	})
	return id, err
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

// do runs call in a slot; under an adaptive limit, the call's latency
// (without the wait for the slot) moves the limit. A call that failed
// counts too: a runtime that fails slowly under load is loaded.
func (l *limited) do(ctx context.Context, prio int, verb string, call func() error) error {
	inFlight, err := l.acquire(ctx, prio, verb)
	if err != nil {
		return fmt.Errorf("%s: waiting for a runtime slot: %w", verb, err)
	}
	if l.gradient == nil {
		defer l.sem.release()
		return call()
	}
	start := l.clock.Now()
	err = call()
	took := l.clock.Since(start)
	l.sem.release()
	l.adapt.Lock()
	if n := l.gradient.Observe(verb, took, inFlight); n != l.sem.currentLimit() {
		l.sem.setLimit(n)
		klog.V(4).InfoS("Runtime call limit changed", "limit", n, "verb", verb, "took", took, "inFlight", inFlight)
	}
	l.adapt.Unlock()
	return err
}

// acquire takes a slot for verb, logging the wait at verbosity 6, and
// returns the calls in flight with it.
func (l *limited) acquire(ctx context.Context, prio int, verb string) (int, error) {
	if !klog.V(6).Enabled() {
		return l.sem.acquire(ctx, prio)
	}
	start := time.Now()
	n, err := l.sem.acquire(ctx, prio)
	klog.V(6).InfoS("Runtime slot", "verb", verb, "waited", time.Since(start))
	return n, err
}

// prioritySem is a counting semaphore whose waiters are served by priority,
// first come first served within one. Its limit may change while calls are
// in flight (an adaptive limit): a lower one takes effect as calls return,
// a higher one admits waiters at once.
type prioritySem struct {
	mu       sync.Mutex
	limit    int
	inFlight int
	waiters  [numPrios][]chan struct{}
}

func newPrioritySem(n int) *prioritySem { return &prioritySem{limit: n} }

// acquire waits for a slot and returns the calls in flight with it.
func (s *prioritySem) acquire(ctx context.Context, prio int) (int, error) {
	s.mu.Lock()
	if s.inFlight < s.limit && s.queued() == 0 {
		s.inFlight++
		n := s.inFlight
		s.mu.Unlock()
		return n, nil
	}
	ch := make(chan struct{})
	s.waiters[prio] = append(s.waiters[prio], ch)
	s.mu.Unlock()
	select {
	case <-ch:
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.inFlight, nil
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		select {
		case <-ch:
			// Granted meanwhile: hand the slot on.
			s.inFlight--
			s.grant()
		default:
			s.remove(prio, ch)
		}
		return 0, ctx.Err()
	}
}

func (s *prioritySem) currentLimit() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limit
}

func (s *prioritySem) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight--
	s.grant()
}

// setLimit changes the limit, admitting waiters if it grew.
func (s *prioritySem) setLimit(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit = max(1, n)
	s.grant()
}

// grant gives the free slots to the first waiters of the highest priority.
// s.mu is held.
func (s *prioritySem) grant() {
	for s.inFlight < s.limit {
		ch := s.next()
		if ch == nil {
			return
		}
		s.inFlight++
		close(ch)
	}
}

// next pops the first waiter of the highest priority, nil if none. s.mu is
// held.
func (s *prioritySem) next() chan struct{} {
	for p := range s.waiters {
		if q := s.waiters[p]; len(q) > 0 {
			s.waiters[p] = q[1:]
			return q[0]
		}
	}
	return nil
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
