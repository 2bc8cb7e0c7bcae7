package kuberuntime

import (
	"maps"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// reasonEntry is why a container could not be started in the last sync.
type reasonEntry struct {
	reason  string // a waiting reason: CrashLoopBackOff, ErrImagePull, …
	message string
	at      time.Time
}

type reasonKey struct {
	uid  types.UID
	name string
}

// reasonCache keeps the last start failure per container so pod status can
// show it as the waiting reason. A successful start clears the entry.
type reasonCache struct {
	clock   clock.Clock
	mu      sync.Mutex
	entries map[reasonKey]reasonEntry
}

func newReasonCache(c clock.Clock) *reasonCache {
	return &reasonCache{clock: c, entries: map[reasonKey]reasonEntry{}}
}

func (c *reasonCache) set(uid types.UID, name, reason, message string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[reasonKey{uid, name}] = reasonEntry{reason: reason, message: message, at: c.clock.Now()}
}

func (c *reasonCache) remove(uid types.UID, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, reasonKey{uid, name})
}

func (c *reasonCache) get(uid types.UID, name string) (reasonEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[reasonKey{uid, name}]
	return e, ok
}

// gc drops entries not renewed within ttl.
func (c *reasonCache) gc(ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	maps.DeleteFunc(c.entries, func(_ reasonKey, e reasonEntry) bool { return now.Sub(e.at) > ttl })
}

func (c *reasonCache) forgetPod(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	maps.DeleteFunc(c.entries, func(k reasonKey, _ reasonEntry) bool { return k.uid == uid })
}
