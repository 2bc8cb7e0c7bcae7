package remote

import (
	"sort"

	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/klog/v2"
)

// A re-watch reads the node's consumer from the start on whichever server
// leads that consumer, out of that server's copy of the stream. On a
// cluster that copy can be behind for a moment (a server restarted and
// catching up, or the consumer's leadership just moved to a follower that
// has not applied every committed write yet): its snapshot is then older
// than what the node already applied. Such a snapshot must not remove a
// pod. The rule, which needs nothing the node's permissions do not give:
//
//   - a key whose snapshot entry is a deletion is gone only if that
//     deletion is at or above the revision the node applied for it (an
//     older tombstone is a replay, transition ignores it too);
//   - a key absent from the snapshot is gone only if the snapshot reaches
//     the revision the node applied for it: the copy then holds every
//     message up to that revision, so the key's messages were removed
//     (purged) by a committed write;
//   - otherwise the key is "unconfirmed": its pod keeps running, and the
//     first live entry at or above its revision proves the copy has caught
//     up — if the key has not shown up by then, it is gone.
//
// So a stale copy delays a removal; it never removes a pod the stream
// still has (TestStaleSnapshotRemovesNothing). All of this rests on the
// snapshot being every entry of the node's filter up to its newest
// revision: bus.ConsumerWatch proves that for every read (consumer
// sequences without a gap, heartbeats that agree) or ends the read with
// bus.ErrConsumerGap, and the source reads again (docs/fleet.md).

// goneIn sorts the delivered (or shadowed) keys missing from a re-watch's
// snapshot into those provably gone and those to confirm later.
func (s *Source) goneIn(initial map[string]jetstream.KeyValueEntry, keys []string) (gone []string, unsure map[string]uint64) {
	var newest uint64
	for _, e := range initial {
		newest = max(newest, e.Revision())
	}
	unsure = map[string]uint64{}
	for _, k := range keys {
		e, ok := initial[k]
		switch {
		case ok && !isDeletion(e):
			// still there
		case ok && e.Revision() >= s.revs[k], !ok && newest >= s.revs[k]:
			gone = append(gone, k)
		default:
			unsure[k] = s.revs[k]
		}
	}
	sort.Strings(gone)
	return gone, unsure
}

// removeGone removes the pods of keys that are gone from the bucket, for
// cause (a tombstone or purge the snapshot holds, or absence).
func (s *Source) removeGone(keys []string, cause func(key string) RemovalCause) {
	for _, k := range keys {
		pod, ok := s.delivered[k]
		if !ok {
			delete(s.shadowed, k)
			continue
		}
		delete(s.delivered, k)
		s.remove(k, s.forceDeleted(pod), cause(k))
		// A node key gone while the watch was down frees its name.
		for _, u := range s.freeName(k) {
			s.emit(k, u)
		}
	}
}

// absent is the cause of keys a re-read no longer has.
func absent(string) RemovalCause { return CauseAbsent }

// confirm is called with every live entry: keys of a stale snapshot whose
// revision the watch has now reached without seeing them are gone.
func (s *Source) confirm(e jetstream.KeyValueEntry) {
	if len(s.unconfirmed) == 0 {
		return
	}
	delete(s.unconfirmed, e.Key()) // its own entry decided (transition)
	var gone []string
	for k, rev := range s.unconfirmed {
		if e.Revision() >= rev {
			gone = append(gone, k)
			delete(s.unconfirmed, k)
		}
	}
	if len(gone) == 0 {
		return
	}
	sort.Strings(gone)
	klog.InfoS("Desired keys missing from a stale snapshot are gone: the watch passed their revisions without them",
		"node", s.cfg.NodeName, "keys", gone, "revision", e.Revision())
	s.removeGone(gone, absent)
}
