package bus

import (
	"testing"
	"time"
)

// Every wait lies in the upper half of its step; steps double up to the
// cap; Reset starts over; the waits of nodes that failed together spread.
func TestBackoff(t *testing.T) {
	var b Backoff
	steps := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		1600 * time.Millisecond, 3200 * time.Millisecond, 5 * time.Second, 5 * time.Second}
	for i, step := range steps {
		if d := b.Next(); d < step/2 || d > step {
			t.Errorf("wait %d: %s, want within [%s, %s]", i, d, step/2, step)
		}
	}
	b.Reset()
	if d := b.Next(); d < 50*time.Millisecond || d > 100*time.Millisecond {
		t.Errorf("after Reset: %s", d)
	}
	seen := map[time.Duration]bool{}
	for range 100 {
		var n Backoff
		n.Next()
		seen[n.Next()] = true
	}
	if len(seen) < 50 {
		t.Errorf("100 nodes' second waits took %d values: not spread", len(seen))
	}
}
