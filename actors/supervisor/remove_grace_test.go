package supervisor

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/messages"
)

// A removal whose pod carries a deletion with grace 0 (a deleted desired
// key) kills with the shortest grace (1 s); a removal that carries no
// deletion keeps the pod's own (30 s by default); a removal never
// lengthens a deletion's grace. Before, the removal's pod was ignored and
// every removal killed with the pod's own grace.
func TestRemoveOnlyShortensTheGracePeriod(t *testing.T) {
	for _, tc := range []struct {
		name    string
		deleted int64 // grace of a graceful deletion before the removal; -1: none
		removed int64 // grace the removal carries; -1: none
		want    int64
	}{
		{"key deleted: grace 0", -1, 0, 1},
		{"removed without deletion: the pod's own", -1, -1, 30},
		{"removal does not lengthen a deletion", 5, 600, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			p := newPod("a", "a", 1)
			h.add(p)
			eventually(t, "sync", func() bool { return h.syncsOf("a") > 0 })
			kills := 0
			if tc.deleted >= 0 {
				h.send(&messages.PodUpdate{Op: messages.OpDelete, Pods: []*v1.Pod{deletedPod(p, tc.deleted)}, Source: messages.SourceRemote})
				eventually(t, "graceful kill", func() bool { return len(h.killsOf("a")) == 1 })
				kills = 1
				p = deletedPod(p, tc.deleted)
			}
			removed := p
			if tc.removed >= 0 {
				removed = deletedPod(p, tc.removed)
			}
			h.send(&messages.PodUpdate{Op: messages.OpRemove, Pods: []*v1.Pod{removed}, Source: messages.SourceRemote})
			if kills == 0 {
				eventually(t, "kill", func() bool { return len(h.killsOf("a")) == 1 })
			} else {
				// Finished by the graceful kill, the worker is purged on
				// the removal.
				eventually(t, "purged", func() bool { return !h.describe("a").Found })
			}
			all := h.killsOf("a")
			switch g := all[len(all)-1].Grace; {
			case g == nil:
				t.Fatalf("kill without grace, want %d", tc.want)
			case *g != tc.want:
				t.Fatalf("kill grace = %d, want %d", *g, tc.want)
			}
		})
	}
}
