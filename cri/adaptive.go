package cri

import (
	"sort"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Gradient is an adaptive concurrency limit in the way of TCP Vegas and
// Netflix's Gradient2 limiter: it starts small, grows by one while the
// runtime answers about as fast as it does unloaded, and shrinks by a
// factor when the answers slow down, never above Max nor below 1. The
// runtime's unloaded speed is the least latency seen per verb (a sandbox
// start and a container start differ tenfold) over the last MinWindow, so
// a runtime that got slower for good is re-learned rather than throttled
// forever.
//
// A window closes after as many samples as the limit; it then moves the
// limit by the median of latency / unloaded latency over the window (the
// median, not the mean: on a shared machine one call in a window stalls
// for reasons of its own):
// at most GrowBelow and with the limit reached at least once in the
// window, +1; above ShrinkAbove, ×Backoff; in between, it holds.
type Gradient struct {
	// Max is the cap (the --max-parallel-runtime-calls value), > 0.
	Max int
	// Initial is the starting limit (default 2, at most Max).
	Initial int
	// GrowBelow and ShrinkAbove are the latency ratios that grow and
	// shrink the limit (defaults 1.5 and 2).
	GrowBelow, ShrinkAbove float64
	// Backoff multiplies the limit on a slow window (default 0.75).
	Backoff float64
	// MinWindow is how long a verb's least latency stands (default 30 s).
	MinWindow time.Duration
	// Clock is the time source of MinWindow (default the real clock).
	Clock clock.PassiveClock
	// OnChange, if set, is called with every new limit (under the lock:
	// it must not call back).
	OnChange func(limit int)

	once sync.Once
	mu   sync.Mutex
	lim  int
	// minimum latencies per verb in the current and the previous
	// MinWindow; the unloaded latency is the lesser of the two.
	cur, prev map[string]time.Duration
	rotated   time.Time
	// the open window
	ratios    []float64
	saturated bool
}

func (g *Gradient) init() {
	g.once.Do(func() {
		if g.Max < 1 {
			g.Max = 1
		}
		if g.Initial <= 0 {
			g.Initial = 2
		}
		g.lim = min(g.Initial, g.Max)
		if g.GrowBelow <= 0 {
			g.GrowBelow = 1.5
		}
		if g.ShrinkAbove <= 0 {
			g.ShrinkAbove = 2
		}
		if g.Backoff <= 0 || g.Backoff >= 1 {
			g.Backoff = 0.75
		}
		if g.MinWindow <= 0 {
			g.MinWindow = 30 * time.Second
		}
		if g.Clock == nil {
			g.Clock = clock.RealClock{}
		}
		g.cur, g.prev = map[string]time.Duration{}, map[string]time.Duration{}
		g.rotated = g.Clock.Now()
	})
}

// Limit is the current limit.
func (g *Gradient) Limit() int {
	g.init()
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.lim
}

// Observe records one call of verb that took d and started with inFlight
// calls in flight (itself included), and returns the limit after it.
func (g *Gradient) Observe(verb string, d time.Duration, inFlight int) int {
	g.init()
	if d <= 0 {
		d = time.Nanosecond
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if now := g.Clock.Now(); now.Sub(g.rotated) >= g.MinWindow {
		g.prev, g.cur, g.rotated = g.cur, map[string]time.Duration{}, now
	}
	if m, ok := g.cur[verb]; !ok || d < m {
		g.cur[verb] = d
	}
	base := g.cur[verb]
	if m, ok := g.prev[verb]; ok && m < base {
		base = m
	}
	g.ratios = append(g.ratios, float64(d)/float64(base))
	if inFlight >= g.lim {
		g.saturated = true
	}
	if len(g.ratios) < g.lim {
		return g.lim
	}
	sort.Float64s(g.ratios)
	n := len(g.ratios)
	ratio := (g.ratios[(n-1)/2] + g.ratios[n/2]) / 2 // the median; of two, their mean
	old := g.lim
	switch {
	case ratio > g.ShrinkAbove:
		g.lim = max(1, int(float64(g.lim)*g.Backoff))
	case ratio <= g.GrowBelow && g.saturated:
		g.lim = min(g.Max, g.lim+1)
	}
	g.ratios, g.saturated = g.ratios[:0], false
	if g.lim != old && g.OnChange != nil {
		g.OnChange(g.lim)
	}
	return g.lim
}
