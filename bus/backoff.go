package bus

import (
	"math/rand/v2"
	"time"
)

// Waits between the reads of a consumer that failed: doubling from
// rereadBase to rereadMax.
const (
	rereadBase = 100 * time.Millisecond
	rereadMax  = 5 * time.Second
)

// Backoff is the wait before a consumer is read again after a failed read:
// it doubles from 100 ms to 5 s, and each wait is drawn from the upper half
// of its step. The reads of many nodes often fail together (a server that
// stalls silences all their pull requests at once), and each read starts
// with a lookup and two resets of its consumer, requests to the JetStream
// API: without the draw, every node asked again at the same instants, and
// the API, already slow, timed out more of them at each step. The zero
// value is ready.
type Backoff struct{ step time.Duration }

// Next is the wait before the next read; each call doubles the step.
func (b *Backoff) Next() time.Duration {
	if b.step == 0 {
		b.step = rereadBase
	}
	d := b.step/2 + rand.N(b.step/2+1)
	b.step = min(2*b.step, rereadMax)
	return d
}

// Reset starts again from the first step (a read succeeded).
func (b *Backoff) Reset() { b.step = 0 }
