package remote

import (
	"encoding/json"
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/messages/wire"

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

// A pod whose last published status (this node's status entry, the API
// server's copy) is terminal for the same UID is delivered with it when
// first seen, so an agent restart does not run it again; the status stays
// on its updates. Another UID, a status not terminal, the source's own
// FailedValidation status and a key first seen after the first snapshot
// give nothing. A pod applied again while being
// deleted (the UID kept, the deletion timestamp gone) goes and comes back as
// new, without a status.
func TestTerminalStatusOfTheSameUIDIsKept(t *testing.T) {
	e := newEnv(t)
	kv, err := e.conn.JS.KeyValue(e.ctx, wire.StatusBucket)
	if err != nil {
		t.Fatal(err)
	}
	last := func(name, uid string, st v1.PodStatus) {
		var p v1.Pod
		if err := json.Unmarshal(podJSON(t, "default", name, "nginx:1.27", withUID(uid)), &p); err != nil {
			t.Fatal(err)
		}
		p.Status = st
		data, err := json.Marshal(&p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Put(e.ctx, wire.StatusKey("n1", "default", name), data); err != nil {
			t.Fatal(err)
		}
	}
	evicted := v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted", Message: "node pressure"}
	last("evicted", "uid-e", evicted)
	last("replaced", "uid-old", evicted)
	last("running", "uid-r", v1.PodStatus{Phase: v1.PodRunning})
	last("invalid", "uid-i", v1.PodStatus{Phase: v1.PodFailed, Reason: FailedValidationReason})
	for name, uid := range map[string]string{"evicted": "uid-e", "replaced": "uid-new", "running": "uid-r", "invalid": "uid-i"} {
		e.put(t, wire.DesiredNodeKey("n1", "default", name), podJSON(t, "default", name, "nginx:1.27", withUID(uid)))
	}
	_, c := e.start(t, "n1", nil)
	set := c.waitUpdates(t, 1)[0]
	if set.Op != messages.OpSet || len(set.Pods) != 4 {
		t.Fatalf("first update %v, want a SET of 4 pods", set)
	}
	for _, p := range set.Pods {
		want := v1.PodStatus{}
		if p.Name == "evicted" {
			want = evicted
		}
		if !apiequality.Semantic.DeepEqual(p.Status, want) {
			t.Errorf("%s delivered with status %+v, want %+v", p.Name, p.Status, want)
		}
	}

	// A key first seen after the first snapshot has no entry from before
	// this run: an entry there is this run's, of an older life (a key
	// deleted and put again while its status removal is on its way).
	last("later", "uid-l", evicted)
	e.putPod(t, "n1", "later", "nginx:1.27", withUID("uid-l"))
	if u := c.waitUpdates(t, 2)[1]; u.Op != messages.OpAdd || u.Pods[0].Status.Phase != "" {
		t.Fatalf("pod first seen after the snapshot: %v with phase %q, want an ADD without a status", u, u.Pods[0].Status.Phase)
	}

	key := wire.DesiredNodeKey("n1", "default", "evicted")
	e.put(t, key, podJSON(t, "default", "evicted", "nginx:1.28", withUID("uid-e")))
	if u := c.waitUpdates(t, 3)[2]; u.Op != messages.OpUpdate || u.Pods[0].Status.Phase != v1.PodFailed {
		t.Fatalf("spec update %v (phase %s), want an UPDATE keeping phase Failed", u, u.Pods[0].Status.Phase)
	}
	e.put(t, key, podJSON(t, "default", "evicted", "nginx:1.28", withUID("uid-e"), deleting(ptr(int64(30)))))
	if u := c.waitUpdates(t, 4)[3]; u.Op != messages.OpDelete || u.Pods[0].Status.Phase != v1.PodFailed {
		t.Fatalf("deletion %v, want a DELETE keeping phase Failed", u)
	}
	e.put(t, key, podJSON(t, "default", "evicted", "nginx:1.28", withUID("uid-e")))
	got := c.waitUpdates(t, 6)
	if got[4].Op != messages.OpRemove || got[5].Op != messages.OpAdd || got[5].Pods[0].UID != "uid-e" {
		t.Fatalf("re-applied while being deleted: %v, %v; want REMOVE then ADD of uid-e", got[4], got[5])
	}
	if g := got[4].Pods[0].DeletionGracePeriodSeconds; g == nil || *g != 0 {
		t.Errorf("REMOVE of the re-applied pod: grace %v, want 0", g)
	}
	if p := got[5].Pods[0]; p.DeletionTimestamp != nil || p.Status.Phase != "" {
		t.Errorf("ADD of the re-applied pod: deletion %v, phase %q; want a new pod", p.DeletionTimestamp, p.Status.Phase)
	}
}
