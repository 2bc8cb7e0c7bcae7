package cri

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// countingRuntime records how many calls are in flight at most; each call
// blocks until released.
type countingRuntime struct {
	Runtime
	inFlight, max atomic.Int32
	gate          chan struct{}
	mu            sync.Mutex
	order         []string
}

func (c *countingRuntime) enter(verb string) {
	n := c.inFlight.Add(1)
	for {
		m := c.max.Load()
		if n <= m || c.max.CompareAndSwap(m, n) {
			break
		}
	}
	c.mu.Lock()
	c.order = append(c.order, verb)
	c.mu.Unlock()
	<-c.gate
	c.inFlight.Add(-1)
}

func (c *countingRuntime) RunPodSandbox(context.Context, *runtimeapi.PodSandboxConfig, string) (string, error) {
	c.enter("RunPodSandbox")
	return "sb", nil
}

func (c *countingRuntime) StartContainer(context.Context, string) error {
	c.enter("StartContainer")
	return nil
}

func TestLimitBoundsCallsInFlight(t *testing.T) {
	fake := &countingRuntime{gate: make(chan struct{})}
	rt := Limit(fake, 3)
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = rt.RunPodSandbox(context.Background(), nil, "") }()
	}
	deadline := time.Now().Add(5 * time.Second)
	for fake.inFlight.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	close(fake.gate)
	wg.Wait()
	if got := fake.max.Load(); got != 3 {
		t.Fatalf("at most %d calls were in flight, want 3", got)
	}
}

func TestLimitServesContainerStartsBeforeNewSandboxes(t *testing.T) {
	fake := &countingRuntime{gate: make(chan struct{})}
	rt := Limit(fake, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _, _ = rt.RunPodSandbox(context.Background(), nil, "") }() // holds the slot
	for fake.inFlight.Load() < 1 {
		time.Sleep(time.Millisecond)
	}
	l := rt.(*limited)
	waitQueued := func(n int) {
		for {
			l.sem.mu.Lock()
			q := l.sem.queued()
			l.sem.mu.Unlock()
			if q >= n {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	wg.Add(2)
	go func() { defer wg.Done(); _, _ = rt.RunPodSandbox(context.Background(), nil, "") }()
	waitQueued(1)
	go func() { defer wg.Done(); _ = rt.StartContainer(context.Background(), "c") }()
	waitQueued(2)
	for i := 0; i < 3; i++ {
		fake.gate <- struct{}{}
	}
	wg.Wait()
	want := []string{"RunPodSandbox", "StartContainer", "RunPodSandbox"}
	for i := range want {
		if fake.order[i] != want[i] {
			t.Fatalf("order = %v, want %v (a pod with a sandbox goes before a new sandbox)", fake.order, want)
		}
	}
}

func TestLimitWaiterGivesUpWithItsContext(t *testing.T) {
	fake := &countingRuntime{gate: make(chan struct{})}
	rt := Limit(fake, 1)
	done := make(chan struct{})
	go func() { defer close(done); _, _ = rt.RunPodSandbox(context.Background(), nil, "") }()
	for fake.inFlight.Load() < 1 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := rt.StartContainer(ctx, "c"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the waiter's deadline", err)
	}
	close(fake.gate)
	<-done
	// The slot is free again: a new call goes through at once.
	if err := rt.StartContainer(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
}
