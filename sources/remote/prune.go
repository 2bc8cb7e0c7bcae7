package remote

import (
	"context"
	"time"

	"github.com/actorlet/actorlet/cmd/actorlet/bus/publish"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/wire"
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
		keep[wire.StatusKey(s.cfg.NodeName, pod.Namespace, pod.Name)] = true
	}
	for key := range s.rejected {
		if dk, err := wire.ParseDesiredKey(key); err == nil {
			keep[wire.StatusKey(s.cfg.NodeName, dk.Namespace, dk.Name)] = true
		}
	}
	publish.PruneStale(ctx, s.status, s.cfg.NodeName, messages.SourceRemote, keep)
}
