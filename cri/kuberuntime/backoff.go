package kuberuntime

import (
	"maps"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// backOffKey names one back-off sequence: a container instance lineage
// (pod, name, spec hash) for restarts, or (pod, image) for pulls.
type backOffKey struct {
	uid  types.UID
	name string
	hash uint64
}

type backOffEntry struct {
	backoff    time.Duration
	lastUpdate time.Time // when the sequence last stepped (clock time)
	waitSince  time.Time // event the current wait is measured from
}

// backOff is an exponential back-off per key on an injected clock: initial,
// doubling to max. A key that has been quiet for 2×max starts over, which
// for restarts means the container ran well for 10 minutes.
type backOff struct {
	clock   clock.Clock
	initial time.Duration
	max     time.Duration

	mu      sync.Mutex
	entries map[backOffKey]*backOffEntry
}

func newBackOff(c clock.Clock, initial, max time.Duration) *backOff {
	return &backOff{clock: c, initial: initial, max: max, entries: map[backOffKey]*backOffEntry{}}
}

func (b *backOff) expired(e *backOffEntry, eventTime time.Time) bool {
	return eventTime.Sub(e.lastUpdate) > 2*b.max
}

// next steps the sequence for an event at eventTime and returns the new
// back-off: initial the first time or after a quiet period, else doubled.
func (b *backOff) next(key backOffKey, eventTime time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok || b.expired(e, eventTime) {
		e = &backOffEntry{backoff: b.initial}
		b.entries[key] = e
	} else {
		e.backoff = min(2*e.backoff, b.max)
	}
	e.lastUpdate = b.clock.Now()
	e.waitSince = eventTime
	return e.backoff
}

// inBackOffSince reports whether, measured from eventTime (the container's
// finish), the key is still within its back-off, and that back-off.
func (b *backOff) inBackOffSince(key backOffKey, eventTime time.Time) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok || b.expired(e, eventTime) {
		return false, 0
	}
	if b.clock.Since(eventTime) < e.backoff {
		e.waitSince = eventTime
		return true, e.backoff
	}
	return false, e.backoff
}

// inBackOffSinceUpdate reports whether the key stepped less than its
// back-off ago (used for image pulls, which have no finish time), and when
// that back-off ends.
func (b *backOff) inBackOffSinceUpdate(key backOffKey) (bool, time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok {
		return false, time.Time{}
	}
	return b.clock.Since(e.lastUpdate) < e.backoff, e.lastUpdate.Add(e.backoff)
}

// reset forgets the key (a pull that succeeded).
func (b *backOff) reset(key backOffKey) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.entries, key)
}

// endsForPod maps each name of the pod to the end of its current wait.
func (b *backOff) endsForPod(uid types.UID) map[string]time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]time.Time{}
	for k, e := range b.entries {
		if k.uid != uid {
			continue
		}
		end := e.waitSince.Add(e.backoff)
		if cur, ok := out[k.name]; !ok || end.After(cur) {
			out[k.name] = end
		}
	}
	return out
}

// gc drops sequences quiet for longer than 2×max.
func (b *backOff) gc() {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	maps.DeleteFunc(b.entries, func(_ backOffKey, e *backOffEntry) bool { return b.expired(e, now) })
}

func (b *backOff) forgetPod(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	maps.DeleteFunc(b.entries, func(k backOffKey, _ *backOffEntry) bool { return k.uid == uid })
}
