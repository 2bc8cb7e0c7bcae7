package remote

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/messages/validation"
	"github.com/actorlet/actorlet/messages/wire"
)

// finalizeAttempts bounds retries when the key changes under Finalize.
const finalizeAttempts = 3

// Finalize deletes the desired key of a gracefully deleted pod once it has
// terminated. The key is deleted only while the stored pod is the same pod
// (UID) and still carries a deletion timestamp, and only at the revision
// read: an operator who re-applies the pod in the meantime wins. A key that
// is already gone is not an error.
func (s *Source) Finalize(ctx context.Context, pod *v1.Pod) error {
	key := pod.Annotations[DesiredKeyAnnotation]
	if key == "" {
		return fmt.Errorf("finalize pod %s/%s: no %s annotation, not a remote pod", pod.Namespace, pod.Name, DesiredKeyAnnotation)
	}
	if k, err := wire.ParseDesiredKey(key); err == nil && k.Fleet {
		// A fleet key is shared: one node finishing first must not cut the
		// other nodes' grace period short, and nodes may not write fleet
		// keys (docs/security.md). Operators remove it.
		klog.V(2).InfoS("Not deleting a fleet key: operators remove it once nodes report the pod terminated", "key", key, "pod", klog.KObj(pod))
		return nil
	}
	for attempt := 1; ; attempt++ {
		e, err := s.kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("finalize pod %s/%s: read %q: %w", pod.Namespace, pod.Name, key, err)
		}
		stored, err := validation.DecodePod(e.Value())
		if err != nil {
			klog.InfoS("Not deleting desired key: its value is no longer a pod", "key", key, "err", err)
			return nil
		}
		uid := stored.UID
		if uid == "" {
			uid = s.uidFor(key)
		}
		if stored.DeletionTimestamp == nil || uid != pod.UID {
			klog.V(2).InfoS("Not deleting desired key: the pod was re-applied", "key", key, "pod", klog.KObj(pod))
			return nil
		}
		err = s.kv.Delete(ctx, key, jetstream.LastRevision(e.Revision()))
		if err == nil {
			klog.V(2).InfoS("Deleted desired key of terminated pod", "key", key, "pod", klog.KObj(pod))
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) || attempt == finalizeAttempts {
			return fmt.Errorf("finalize pod %s/%s: delete %q at revision %d: %w", pod.Namespace, pod.Name, key, e.Revision(), err)
		}
	}
}
