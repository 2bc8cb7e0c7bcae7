package remote

import (
	"context"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/wire"
)

// pruneStatuses asks the status owner to delete the entries of this node's
// remote pods that are no longer desired: left by an earlier run of the
// agent for pods whose keys were deleted while it was away. Entries of pods
// desired now and of rejected keys (their FailedValidation status) are
// kept. Once such a prune is complete, a key that is new to this run can
// have no FailedValidation entry of an earlier run (s.pruned).
func (s *Source) pruneStatuses(ctx context.Context) {
	keep := make([]wire.PodRef, 0, len(s.delivered)+len(s.rejected))
	for _, pod := range s.delivered {
		keep = append(keep, wire.PodRef{Namespace: pod.Namespace, Name: pod.Name})
	}
	for key := range s.rejected {
		if dk, err := wire.ParseDesiredKey(key); err == nil {
			keep = append(keep, wire.PodRef{Namespace: dk.Namespace, Name: dk.Name})
		}
	}
	s.pruned = s.cfg.Statuses.PruneStale(ctx, messages.SourceRemote, keep)
}
