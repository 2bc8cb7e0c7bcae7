package pleg

import (
	"context"
	"sync"
	"time"

	"github.com/actorlet/actorlet/cri"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Cache holds the latest runtime status of every pod with the time it was
// observed (the kubelet's container cache). PLEG writes it; pod actors'
// work goroutines read it, waiting with GetNewerThan for a status newer than
// their last sync so they never act on stale state. It is safe for
// concurrent use.
type Cache struct {
	clock clock.PassiveClock

	mu   sync.Mutex
	pods map[types.UID]*cacheEntry
	// timestamp is the cache-wide freshness set by UpdateTime: after a full
	// relist every pod, including one with no entry, is known as of it.
	timestamp time.Time
	// changed is closed and replaced on every write, waking the waiters of
	// GetNewerThan.
	changed chan struct{}
}

type cacheEntry struct {
	status   *cri.PodStatus
	err      error
	modified time.Time
}

// NewCache returns an empty cache. clk stamps writes made with a zero time;
// nil means the real clock.
func NewCache(clk clock.PassiveClock) *Cache {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Cache{
		clock:   clk,
		pods:    make(map[types.UID]*cacheEntry),
		changed: make(chan struct{}),
	}
}

// Set records the status (or the error inspecting it) of a pod as observed
// at ts (the cache's clock when ts is zero). A write older than the entry
// already held is ignored, so a slow inspection never overwrites a newer
// one.
func (c *Cache) Set(uid types.UID, status *cri.PodStatus, err error, ts time.Time) {
	if ts.IsZero() {
		ts = c.clock.Now()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.pods[uid]; ok && old.modified.After(ts) {
		return
	}
	c.pods[uid] = &cacheEntry{status: status, err: err, modified: ts}
	c.notifyLocked()
}

// SetSnapshot records a status the runtime made at made (a container
// event's) that arrived at now: ignored when the entry held is newer than
// made (a pod sync's own read since), else stamped with made, as the
// kubelet's evented PLEG does, but never later than its arrival (a runtime
// clock ahead of the agent's would hold the pod's later reads off until
// then). Not stamped with its arrival: a snapshot made before a sync's
// changes, arriving after them, must not pass for newer than the sync
// when the sync's own read failed (the pod would be acted on without the
// containers the sync made).
func (c *Cache) SetSnapshot(uid types.UID, status *cri.PodStatus, made, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.pods[uid]; ok && old.modified.After(made) {
		return
	}
	ts := made
	if ts.After(now) {
		ts = now
	}
	c.pods[uid] = &cacheEntry{status: status, modified: ts}
	c.notifyLocked()
}

// Observed records a status a pod's own sync read from the runtime at ts,
// as Set does without an error: the kubelet's evented PLEG likewise caches
// the sync's own status. The timestamp rule holds: ts is when the read
// began, after the sync's changes, and a later PLEG inspection overrides
// it.
func (c *Cache) Observed(uid types.UID, status *cri.PodStatus, ts time.Time) {
	c.Set(uid, status, nil, ts)
}

// Get returns the pod's cached status and the error recorded with it. A pod
// the cache does not hold has an empty status carrying only its UID.
func (c *Cache) Get(uid types.UID) (*cri.PodStatus, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.getLocked(uid)
}

// GetNewerThan blocks until the pod's entry, or the cache as a whole, is
// newer than minTime, then returns like Get. It returns ctx's error when
// ctx ends first.
func (c *Cache) GetNewerThan(ctx context.Context, uid types.UID, minTime time.Time) (*cri.PodStatus, error) {
	for {
		c.mu.Lock()
		if c.freshLocked(uid, minTime) {
			status, err := c.getLocked(uid)
			c.mu.Unlock()
			return status, err
		}
		changed := c.changed
		c.mu.Unlock()

		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// UpdateTime marks every pod as fresh as of ts: after a full relist the
// cache is known to be complete at that time. The cache-wide time never
// moves backwards.
func (c *Cache) UpdateTime(ts time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !ts.After(c.timestamp) {
		return
	}
	c.timestamp = ts
	c.notifyLocked()
}

// Delete drops the pod's entry.
func (c *Cache) Delete(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pods, uid)
	c.notifyLocked()
}

func (c *Cache) freshLocked(uid types.UID, minTime time.Time) bool {
	if c.timestamp.After(minTime) {
		return true
	}
	e, ok := c.pods[uid]
	return ok && e.modified.After(minTime)
}

func (c *Cache) getLocked(uid types.UID) (*cri.PodStatus, error) {
	e, ok := c.pods[uid]
	if !ok {
		return &cri.PodStatus{ID: uid, TimeStamp: c.timestamp}, nil
	}
	if e.status == nil {
		return &cri.PodStatus{ID: uid, TimeStamp: e.modified}, e.err
	}
	return e.status, e.err
}

func (c *Cache) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}
