package remote

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/wire"
)

// transition applies one entry to the per-key state and returns the update
// to send, if any:
//
//	(none)     ──put valid──►            delivered   ADD
//	delivered  ──put, spec changed──►    delivered   UPDATE
//	delivered  ──put, deletionTimestamp► delivered   DELETE (graceful)
//	delivered  ──put, another UID──►     delivered   REMOVE (old, grace 0), ADD (new)
//	delivered  ──delete/purge──►         (none)      REMOVE (grace 0)
//	delivered  ──put, selector misses──► (none)      REMOVE (fleet pods)
//	any        ──put invalid──►          rejected    (reported; a delivered pod keeps its last valid spec)
//	rejected   ──put valid──►            delivered   ADD or UPDATE, failed status cleared
//
// Entries at or below a key's last applied revision are replays (after a
// re-watch) and change nothing.
func (s *Source) transition(ctx context.Context, e jetstream.KeyValueEntry) (update, bool) {
	key := e.Key()
	if e.Revision() <= s.revs[key] {
		return update{}, false
	}
	s.revs[key] = e.Revision()
	old := s.delivered[key]

	if isDeletion(e) {
		s.forget(key)
		s.clearRejected(ctx, key)
		if old == nil {
			return update{}, false
		}
		delete(s.delivered, key)
		cause := CauseTombstone
		if e.Operation() == jetstream.KeyValuePurge {
			cause = CausePurge
		}
		return update{messages.OpRemove, s.forceDeleted(old), cause}, true
	}

	dk, err := wire.ParseDesiredKey(key)
	if err != nil {
		s.reject(ctx, key, nil, err, old != nil)
		return update{}, false
	}
	pod, v, err := s.admit(dk, key, e.Value())
	s.remember(e, v == ignored)
	switch v {
	case ignored:
		s.clearRejected(ctx, key)
		if old == nil {
			return update{}, false
		}
		delete(s.delivered, key)
		return update{messages.OpRemove, old, CausePlacement}, true
	case rejected:
		s.reject(ctx, key, &dk, err, old != nil)
		return update{}, false
	}

	if old == nil || s.rejected[key] {
		s.clearRejected(ctx, key)
		s.clearFailedStatus(ctx, dk)
	}
	s.delivered[key] = pod
	switch {
	case old == nil:
		return update{op: messages.OpAdd, pod: pod}, true
	case apiequality.Semantic.DeepEqual(old, pod):
		return update{}, false
	case old.UID != pod.UID:
		// Deleted and created again (a node that missed the delete sees the
		// UID change in place): as the kubelet does for a new UID, the old
		// pod is gone at once and the new one is a new pod.
		klog.InfoS("Desired pod replaced by a pod with another UID", "key", key, "pod", klog.KObj(pod), "oldUID", old.UID, "podUID", pod.UID)
		s.remove(key, s.forceDeleted(old), CauseReplaced)
		return update{op: messages.OpAdd, pod: pod}, true
	case pod.DeletionTimestamp != nil:
		return update{op: messages.OpDelete, pod: pod}, true
	default:
		return update{op: messages.OpUpdate, pod: pod}, true
	}
}

// forceDeleted is old as a deleted key leaves it: deleted with grace 0
// (the node's minimum), like a pod force-deleted from the API server. A
// graceful deletion in progress is thereby shortened, never lengthened.
func (s *Source) forceDeleted(old *v1.Pod) *v1.Pod {
	p := old.DeepCopy()
	if p.DeletionTimestamp == nil {
		now := metav1.NewTime(s.cfg.Clock.Now())
		p.DeletionTimestamp = &now
	}
	zero := int64(0)
	p.DeletionGracePeriodSeconds = &zero
	return p
}
