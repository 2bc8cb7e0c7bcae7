package supervisor

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/actorlet/actorlet/cri/imagegc"
)

// blockingGC is an image collector that counts its runs and holds each
// until released.
type blockingGC struct {
	mu      sync.Mutex
	runs    int
	release chan struct{}
}

func (g *blockingGC) GarbageCollect(ctx context.Context) (imagegc.Result, error) {
	g.mu.Lock()
	g.runs++
	g.mu.Unlock()
	select {
	case <-g.release:
	case <-ctx.Done():
	}
	return imagegc.Result{}, errors.New("nothing eligible")
}

func (g *blockingGC) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.runs
}

// TestImageGCTicks: the supervisor runs image GC when it starts and every
// ImageGCPeriod, off its loop (a collection in flight does not hold up the
// loop), never two at once, and goes on after a failed one.
func TestImageGCTicks(t *testing.T) {
	gc := &blockingGC{release: make(chan struct{})}
	h := newHarness(t, func(c *Config) { c.ImageGC, c.ImageGCPeriod = gc, time.Minute })
	eventually(t, "the image GC ticker", func() bool { return h.clock.Waiters() >= 3 })
	eventually(t, "a first collection at start", func() bool { return gc.count() == 1 })
	h.clock.Step(time.Minute) // still running: skipped
	h.describe("none")        // the loop answers meanwhile
	if n := gc.count(); n != 1 {
		t.Fatalf("%d collections at once", n)
	}
	gc.release <- struct{}{}
	eventually(t, "the first collection's outcome", func() bool {
		h.describe("none") // a round trip: the outcome was handled before it
		h.clock.Step(time.Minute)
		return gc.count() == 2
	})
	close(gc.release)
}
