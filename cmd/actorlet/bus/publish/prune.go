package publish

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/wire"
)

// PruneStale deletes the status entries of node's pods from source that
// are not in keep (status keys): left by an earlier run of the agent for
// pods removed while it was away, which nothing in this run would ever
// touch. Entries of other sources are kept, and each delete is conditional
// on the revision read, so a status written meanwhile survives. A source
// calls it once it has delivered its first state.
func PruneStale(ctx context.Context, kv jetstream.KeyValue, node, source string, keep map[string]bool) {
	lister, err := kv.ListKeysFiltered(ctx, wire.EncodeName(node)+".*.*")
	if err != nil {
		klog.ErrorS(err, "Listing pod statuses to prune failed", "node", node, "source", source)
		return
	}
	var stale []string
	for key := range lister.Keys() {
		if !keep[key] {
			stale = append(stale, key)
		}
	}
	_ = lister.Stop()
	for _, key := range stale {
		pruneOne(ctx, kv, key, source)
	}
}

// pruneOne deletes one status entry if a pod of source wrote it.
func pruneOne(ctx context.Context, kv jetstream.KeyValue, key, source string) {
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return
	}
	if err != nil {
		klog.ErrorS(err, "Reading pod status failed", "statusKey", key)
		return
	}
	var pod v1.Pod
	if err := json.Unmarshal(e.Value(), &pod); err != nil || pod.Annotations[messages.ConfigSourceAnnotation] != source {
		return
	}
	err = kv.Delete(ctx, key, jetstream.LastRevision(e.Revision()))
	if err != nil && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		klog.ErrorS(err, "Pruning a stale pod status failed", "statusKey", key)
		return
	}
	klog.InfoS("Pruned the status of a pod no longer desired", "statusKey", key, "pod", klog.KObj(&pod), "source", source)
}
