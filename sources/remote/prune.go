package remote

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/sources/bus"
)

// pruneTimeout bounds the status clean-up after the first snapshot.
const pruneTimeout = 10 * time.Second

// pruneStatuses deletes the status entries of this node's remote pods that
// are no longer desired: left by an earlier run of the agent for pods whose
// keys were deleted while it was away. Nothing in this run would ever touch
// them (the pods are unknown to it), so listing pods would show them
// forever. Entries of pods desired now, of rejected keys, and of other
// sources (static pods) are kept; each delete is conditional on the
// revision read, so a status written meanwhile survives.
func (s *Source) pruneStatuses(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, pruneTimeout)
	defer cancel()
	keep := map[string]bool{}
	for _, pod := range s.delivered {
		keep[bus.StatusKey(s.cfg.NodeName, pod.Namespace, pod.Name)] = true
	}
	for key := range s.rejected {
		if dk, err := bus.ParseDesiredKey(key); err == nil {
			keep[bus.StatusKey(s.cfg.NodeName, dk.Namespace, dk.Name)] = true
		}
	}
	lister, err := s.status.ListKeysFiltered(ctx, bus.EncodeName(s.cfg.NodeName)+".*.*")
	if err != nil {
		klog.ErrorS(err, "Listing pod statuses to prune failed", "node", s.cfg.NodeName)
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
		s.pruneStatus(ctx, key)
	}
}

// pruneStatus deletes one status entry if a remote pod wrote it.
func (s *Source) pruneStatus(ctx context.Context, key string) {
	e, err := s.status.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return
	}
	if err != nil {
		klog.ErrorS(err, "Reading pod status failed", "statusKey", key)
		return
	}
	var pod v1.Pod
	if err := json.Unmarshal(e.Value(), &pod); err != nil || pod.Annotations[messages.ConfigSourceAnnotation] != messages.SourceRemote {
		return
	}
	err = s.status.Delete(ctx, key, jetstream.LastRevision(e.Revision()))
	if err != nil && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		klog.ErrorS(err, "Pruning a stale pod status failed", "statusKey", key)
		return
	}
	klog.InfoS("Pruned the status of a pod no longer desired", "statusKey", key, "pod", klog.KObj(&pod))
}
