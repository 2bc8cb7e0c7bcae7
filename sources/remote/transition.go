package remote

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/podrules"
	"github.com/actorlet/actorlet/messages/wire"
)

// transition applies one entry to the per-key state and returns the update
// to send, if any:
//
//	(none)     ──put valid──►            delivered   ADD
//	delivered  ──put, spec changed──►    delivered   UPDATE
//	delivered  ──put, deletionTimestamp► delivered   DELETE (graceful)
//	delivered  ──put, another UID──►     delivered   REMOVE (old, grace 0), ADD (new)
//	delivered  ──put, deletion dropped─► delivered   REMOVE (old, grace 0), ADD (re-applied)
//	delivered  ──delete/purge──►         (none)      REMOVE (grace 0)
//	delivered  ──put, selector misses──► (none)      REMOVE (fleet pods)
//	any        ──put invalid──►          rejected    (reported; a delivered pod keeps its last valid spec)
//	rejected   ──put valid──►            delivered   ADD or UPDATE, failed status cleared
//
// Entries at or below a key's last applied revision are replays (after a
// re-watch) and change nothing.
//
// A delivered pod carries a status as the API server's copy does: none,
// except a terminal one this node published for the same UID before this
// run (read for the keys of the first snapshot: an agent restart must not
// run a Failed or Succeeded pod again), kept on every update of that UID.
// Keys first seen later have no entry from before this run (the first SET
// prunes them), and an entry written in this run for a key deleted since is
// an old life's, whose removal may still be on its way.
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

	switch {
	case s.rejected[key]:
		s.clearRejected(ctx, key) // and the Failed status written for it
	case old == nil && (!s.sentSet || !s.pruned):
		// A FailedValidation status an earlier run of the agent left for
		// this key. Once the first snapshot is delivered and its prune
		// complete, the only such entries left were of keys that snapshot
		// held (delivered: cleared here then; rejected: cleared with
		// s.rejected), so a key new since costs no read (a round trip per
		// new pod in this loop, two messages on the bus).
		s.clearFailedStatus(ctx, dk)
	}
	reapplied := old != nil && old.UID == pod.UID && old.DeletionTimestamp != nil && pod.DeletionTimestamp == nil
	switch {
	case old == nil:
		if !s.sentSet {
			s.lastTerminalStatus(ctx, dk, pod)
		}
	case old.UID == pod.UID && !reapplied:
		pod.Status = old.Status
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
	case reapplied:
		// Applied again while being deleted (the UID kept, the deletion
		// timestamp gone): the operator wins, as Finalize lets them. The
		// pod's worker is stopping or done and a UID never runs again once
		// terminating, so the pod goes (at once) and comes back as new.
		klog.InfoS("Desired pod re-applied while being deleted, starting it again", "key", key, "pod", klog.KObj(pod), "podUID", pod.UID)
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

// lastTerminalStatus gives pod, in the first snapshot of this run, the
// status this node last published for it when that is terminal (Succeeded
// or Failed) and of the same UID: the pod's worker then starts terminal and
// never runs it again. A FailedValidation status is the source's own, not
// the pod's. When the entry cannot be read the pod is delivered without a
// status.
func (s *Source) lastTerminalStatus(ctx context.Context, dk wire.DesiredKey, pod *v1.Pod) {
	prev, err := s.cfg.Statuses.Read(ctx, dk.Namespace, dk.Name)
	if err != nil {
		klog.ErrorS(err, "Reading the last status of a desired pod failed", "pod", klog.KObj(pod), "podUID", pod.UID)
		return
	}
	if prev == nil || prev.UID != pod.UID || !podrules.IsTerminal(prev.Status.Phase) || prev.Status.Reason == FailedValidationReason {
		return
	}
	klog.V(2).InfoS("Desired pod already terminal on this node", "pod", klog.KObj(pod), "podUID", pod.UID,
		"phase", prev.Status.Phase, "reason", prev.Status.Reason)
	pod.Status = prev.Status
}
