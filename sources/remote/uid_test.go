package remote

import (
	"github.com/actorlet/actorlet/messages/wire"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/messages"
)

func withUID(uid string) podOpt {
	return func(p *v1.Pod) { p.UID = types.UID(uid) }
}

// A value that changes UID in place is the old pod's deletion (REMOVE, grace
// 0) and a new pod (ADD); a deleted key is a REMOVE with grace 0, cutting a
// graceful deletion short. Before, the new UID came as an UPDATE (which the
// mux rejected as DuplicatePod) and a REMOVE kept the pod's own grace.
func TestUIDChangeIsRemoveThenAddAndKeyDeletionIsGraceZero(t *testing.T) {
	e := newEnv(t)
	key := wire.DesiredNodeKey("n1", "default", "web")
	_, c := e.start(t, "n1", nil)
	c.waitUpdates(t, 1)

	e.put(t, key, podJSON(t, "default", "web", "nginx:1.27", withUID("uid-a")))
	c.waitUpdates(t, 2)
	e.put(t, key, podJSON(t, "default", "web", "nginx:1.27", withUID("uid-b")))
	got := c.waitUpdates(t, 4)
	if got[2].Op != messages.OpRemove || got[2].Pods[0].UID != "uid-a" || got[3].Op != messages.OpAdd || got[3].Pods[0].UID != "uid-b" {
		t.Fatalf("after the UID changed: %v, %v; want REMOVE uid-a then ADD uid-b", got[2], got[3])
	}
	if g := got[2].Pods[0].DeletionGracePeriodSeconds; g == nil || *g != 0 || got[2].Pods[0].DeletionTimestamp == nil {
		t.Errorf("REMOVE of the replaced pod: grace %v, deletion %v; want grace 0", g, got[2].Pods[0].DeletionTimestamp)
	}

	e.put(t, key, podJSON(t, "default", "web", "nginx:1.27", withUID("uid-b"), deleting(ptr(int64(600)))))
	c.waitUpdates(t, 5)
	e.del(t, key)
	got = c.waitUpdates(t, 6)
	rm := got[5]
	if rm.Op != messages.OpRemove || rm.Pods[0].UID != "uid-b" {
		t.Fatalf("after the key was deleted: %v, want REMOVE uid-b", rm)
	}
	if g := rm.Pods[0].DeletionGracePeriodSeconds; g == nil || *g != 0 {
		t.Errorf("REMOVE of a deleted key during a 600 s graceful deletion: grace %v, want 0", g)
	}
}
