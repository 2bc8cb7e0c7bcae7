package status

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/messages"
)

// MemorySink keeps every published change in memory, for the tests. It is safe for concurrent use.
type MemorySink struct {
	mu      sync.Mutex
	changes []messages.PodStatusChanged
	latest  map[types.UID]messages.PodStatusChanged
	removed []*v1.Pod
	// changed is closed and replaced on every write, waking waiters.
	changed chan struct{}
}

var _ Sink = &MemorySink{}

// NewMemorySink returns an empty sink.
func NewMemorySink() *MemorySink {
	return &MemorySink{latest: make(map[types.UID]messages.PodStatusChanged), changed: make(chan struct{})}
}

// PodStatusChanged records the change.
func (s *MemorySink) PodStatusChanged(c messages.PodStatusChanged) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.changes = append(s.changes, c)
	if c.Pod != nil {
		s.latest[c.Pod.UID] = c
	}
	s.notifyLocked()
}

// PodStatusRemoved records the removal and forgets the pod's latest status.
func (s *MemorySink) PodStatusRemoved(pod *v1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.removed = append(s.removed, pod)
	if pod != nil {
		delete(s.latest, pod.UID)
	}
	s.notifyLocked()
}

// Latest returns the pod's last published status, if it has one.
func (s *MemorySink) Latest(uid types.UID) (messages.PodStatusChanged, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.latest[uid]
	return c, ok
}

// Changes returns every change published for the pod, oldest first.
func (s *MemorySink) Changes(uid types.UID) []messages.PodStatusChanged {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []messages.PodStatusChanged
	for _, c := range s.changes {
		if c.Pod != nil && c.Pod.UID == uid {
			out = append(out, c)
		}
	}
	return out
}

// Removed returns the pods whose status was removed, in order.
func (s *MemorySink) Removed() []*v1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*v1.Pod(nil), s.removed...)
}

// Wait blocks until the pod's latest status satisfies cond, and returns it,
// or returns ctx's error when ctx ends first.
func (s *MemorySink) Wait(ctx context.Context, uid types.UID, cond func(v1.PodStatus) bool) (messages.PodStatusChanged, error) {
	for {
		s.mu.Lock()
		c, ok := s.latest[uid]
		changed := s.changed
		s.mu.Unlock()
		if ok && cond(c.Pod.Status) {
			return c, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return messages.PodStatusChanged{}, ctx.Err()
		}
	}
}

func (s *MemorySink) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}
