package cri

import (
	"context"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// withFakeClock gives g a fake clock and returns both.
func withFakeClock(g *Gradient) (*Gradient, *clocktesting.FakeClock) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	g.Clock = clk
	return g, clk
}

// drive runs a closed loop of n calls against g (its clock a fake clock):
// every call runs with the limit's worth of calls in flight and takes
// latency(inFlight), the clock advancing by it. Every limit g sets must be
// within 1..g.Max; it returns them, in order.
func drive(t *testing.T, g *Gradient, n int, verb string, latency func(inFlight int) time.Duration) []int {
	t.Helper()
	clk := g.Clock.(*clocktesting.FakeClock)
	var limits []int
	for i := 0; i < n; i++ {
		in := g.Limit()
		d := latency(in)
		clk.Step(d)
		limits = append(limits, g.Observe(verb, d, in))
	}
	for i, l := range limits {
		if l < 1 || l > g.Max {
			t.Fatalf("limit %d after sample %d, want 1..%d", l, i, g.Max)
		}
	}
	return limits
}

// flat is a latency of d whatever is in flight.
func flat(d time.Duration) func(int) time.Duration {
	return func(int) time.Duration { return d }
}

// Under flat latency the limit grows to the cap and stays there.
func TestGradientGrowsToCapUnderFlatLatency(t *testing.T) {
	g, _ := withFakeClock(&Gradient{Max: 16})
	if g.Limit() != 2 {
		t.Fatalf("initial limit %d, want 2", g.Limit())
	}
	drive(t, g, 500, "StartContainer", flat(10*time.Millisecond))
	if got := g.Limit(); got != 16 {
		t.Fatalf("limit %d after 500 flat samples, want the cap 16", got)
	}
}

// A runtime that serializes past 4 calls (latency grows with what is in
// flight beyond 4) holds the limit near 4, not at the cap nor at 1.
func TestGradientSettlesAtTheKnee(t *testing.T) {
	g, _ := withFakeClock(&Gradient{Max: 32})
	knee := func(in int) time.Duration {
		d := 10 * time.Millisecond
		if in > 4 {
			d = d * time.Duration(in) / 4
		}
		return d
	}
	limits := drive(t, g, 2000, "RunPodSandbox", knee)
	tail := limits[len(limits)-200:]
	lo, hi := tail[0], tail[0]
	for _, l := range tail {
		lo, hi = min(lo, l), max(hi, l)
	}
	if lo < 3 || hi > 8 {
		t.Fatalf("limit ranged %d..%d over the last 200 samples, want within 3..8 (the knee is 4)", lo, hi)
	}
}

// Latency that keeps rising whatever the limit drives it down to 1, and
// never below.
func TestGradientBacksOffUnderRisingLatency(t *testing.T) {
	g, _ := withFakeClock(&Gradient{Max: 16, Initial: 16, MinWindow: time.Hour})
	d := 10 * time.Millisecond
	drive(t, g, 200, "CreateContainer", func(int) time.Duration {
		d = d * 103 / 100 // 3.7 s by the 200th call
		return d
	})
	if got := g.Limit(); got != 1 {
		t.Fatalf("limit %d under ever-rising latency, want 1", got)
	}
}

// Windows in which the limit was never reached carry no evidence that more
// would be served as fast: the limit holds.
func TestGradientDoesNotGrowUnsaturated(t *testing.T) {
	g, clk := withFakeClock(&Gradient{Max: 16, Initial: 4})
	for i := 0; i < 100; i++ {
		clk.Step(10 * time.Millisecond)
		g.Observe("StartContainer", 10*time.Millisecond, 1)
	}
	if got := g.Limit(); got != 4 {
		t.Fatalf("limit %d after unsaturated windows, want 4", got)
	}
}

// A runtime that got slower for good (twice as slow even alone) pushes the
// limit down, and once the old minimum has aged out (two MinWindows) the
// slower speed is the new unloaded one and the limit grows again.
func TestGradientRelearnsASlowerRuntime(t *testing.T) {
	g, clk := withFakeClock(&Gradient{Max: 8, Initial: 8, MinWindow: 10 * time.Second})
	drive(t, g, 100, "StartContainer", flat(10*time.Millisecond))
	drive(t, g, 50, "StartContainer", flat(30*time.Millisecond))
	if got := g.Limit(); got >= 8 {
		t.Fatalf("limit %d after the runtime tripled its latency, want it lowered", got)
	}
	clk.Step(25 * time.Second)
	drive(t, g, 500, "StartContainer", flat(30*time.Millisecond))
	if got := g.Limit(); got != 8 {
		t.Fatalf("limit %d long after the runtime settled at its slower speed, want the cap 8", got)
	}
}

// Verbs are measured against their own unloaded latency: a slow sandbox
// start next to fast container starts is not load.
func TestGradientComparesEachVerbToItself(t *testing.T) {
	g, clk := withFakeClock(&Gradient{Max: 12})
	for i := 0; i < 600; i++ {
		in := g.Limit()
		verb, d := "StartContainer", 5*time.Millisecond
		if i%3 == 0 {
			verb, d = "RunPodSandbox", 100*time.Millisecond
		}
		clk.Step(d)
		g.Observe(verb, d, in)
	}
	if got := g.Limit(); got != 12 {
		t.Fatalf("limit %d with two verbs at flat latencies, want the cap 12", got)
	}
}

// A limit raised by the gradient admits waiting calls at once; the calls in
// flight never exceed the limit in force when they were admitted, nor the
// cap.
func TestLimitAdaptiveAdmitsAsTheLimitGrows(t *testing.T) {
	fake := &countingRuntime{gate: make(chan struct{})}
	g := &Gradient{Max: 4, Initial: 1}
	rt := LimitAdaptive(fake, g)
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = rt.RunPodSandbox(context.Background(), nil, "") }()
	}
	for fake.inFlight.Load() < 1 {
		time.Sleep(time.Millisecond)
	}
	l := rt.(*limited)
	for {
		l.sem.mu.Lock()
		q := l.sem.queued()
		l.sem.mu.Unlock()
		if q == 2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	l.sem.setLimit(3)
	for fake.inFlight.Load() < 3 {
		time.Sleep(time.Millisecond)
	}
	close(fake.gate)
	wg.Wait()
	if got := fake.max.Load(); got != 3 {
		t.Fatalf("at most %d calls in flight, want 3", got)
	}
	if got := g.Limit(); got < 1 || got > 4 {
		t.Fatalf("limit %d after the calls, want within 1..4", got)
	}
}

// One stalled call per window (a shared machine's hiccup) does not move
// the limit: the window's median decides.
func TestGradientIgnoresAnOutlierPerWindow(t *testing.T) {
	g, _ := withFakeClock(&Gradient{Max: 16})
	i := 0
	drive(t, g, 1000, "StartContainer", func(int) time.Duration {
		i++
		if i%5 == 0 {
			return time.Second
		}
		return 10 * time.Millisecond
	})
	if got := g.Limit(); got != 16 {
		t.Fatalf("limit %d with one call in five stalling, want the cap 16", got)
	}
}
