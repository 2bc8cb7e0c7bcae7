package remote

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/sources/bus"
)

// transition applies one entry to the per-key state and returns the update
// to send, if any:
//
//	(none)     ──put valid──►            delivered   ADD
//	delivered  ──put, spec changed──►    delivered   UPDATE
//	delivered  ──put, deletionTimestamp► delivered   DELETE (graceful)
//	delivered  ──delete/purge──►         (none)      REMOVE
//	delivered  ──put, selector misses──► (none)      REMOVE (fleet pods)
//	any        ──put invalid──►          rejected    (reported; a delivered pod keeps its last valid spec)
//	rejected   ──put valid──►            delivered   ADD or UPDATE, failed status cleared
//
// Entries at or below a key's last applied revision are replays (after a
// re-watch) and change nothing.
func (s *Source) transition(ctx context.Context, e jetstream.KeyValueEntry) (messages.Op, *v1.Pod, bool) {
	key := e.Key()
	if e.Revision() <= s.revs[key] {
		return 0, nil, false
	}
	s.revs[key] = e.Revision()
	old := s.delivered[key]

	if isDeletion(e) {
		s.clearRejected(ctx, key)
		if old == nil {
			return 0, nil, false
		}
		delete(s.delivered, key)
		return messages.OpRemove, old, true
	}

	dk, err := bus.ParseDesiredKey(key)
	if err != nil {
		s.reject(ctx, key, nil, err, old != nil)
		return 0, nil, false
	}
	pod, v, err := s.admit(dk, key, e.Value())
	switch v {
	case ignored:
		s.clearRejected(ctx, key)
		if old == nil {
			return 0, nil, false
		}
		delete(s.delivered, key)
		return messages.OpRemove, old, true
	case rejected:
		s.reject(ctx, key, &dk, err, old != nil)
		return 0, nil, false
	}

	if old == nil || s.rejected[key] {
		s.clearRejected(ctx, key)
		s.clearFailedStatus(ctx, dk)
	}
	s.delivered[key] = pod
	switch {
	case old == nil:
		return messages.OpAdd, pod, true
	case apiequality.Semantic.DeepEqual(old, pod):
		return 0, nil, false
	case pod.DeletionTimestamp != nil:
		return messages.OpDelete, pod, true
	default:
		return messages.OpUpdate, pod, true
	}
}
