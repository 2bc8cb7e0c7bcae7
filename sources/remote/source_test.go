package remote

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/test/testutil"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/messages"
)

func TestInitialSetIsSentEvenWhenEmpty(t *testing.T) {
	e := newEnv(t)
	_, c := e.start(t, "n1", nil)
	got := c.waitUpdates(t, 1)
	if got[0].Op != messages.OpSet || got[0].Source != messages.SourceRemote || len(got[0].Pods) != 0 {
		t.Fatalf("first update = %v, want an empty SET from remote", got[0])
	}
}

func TestInitialSetHoldsThisNodesPods(t *testing.T) {
	e := newEnv(t)
	e.putPod(t, "n1", "web", "nginx:1.27")
	e.putPod(t, "n2", "other", "nginx:1.27")
	e.put(t, wire.DesiredFleetKey("kube-system", "agent"), podJSON(t, "kube-system", "agent", "agent:1", withSelector(map[string]string{"role": "edge"})))
	e.put(t, wire.DesiredFleetKey("kube-system", "gpu"), podJSON(t, "kube-system", "gpu", "gpu:1", withSelector(map[string]string{"gpu": "true"})))
	// YAML, without namespace or name: both come from the key.
	e.put(t, wire.DesiredNodeKey("n1", "team-a", "yaml"), []byte("spec:\n  containers:\n  - name: c\n    image: busybox:1.36\n"))

	_, c := e.start(t, "n1", map[string]string{"role": "edge"})
	got := c.waitUpdates(t, 1)[0]
	if got.Op != messages.OpSet {
		t.Fatalf("first update is %v, want SET", got)
	}
	want := []string{"kube-system/agent", "default/web", "team-a/yaml"}
	if !reflect.DeepEqual(names(got.Pods), want) {
		t.Fatalf("SET pods = %v, want %v", names(got.Pods), want)
	}
	for _, p := range got.Pods {
		if p.Annotations[messages.ConfigSourceAnnotation] != messages.SourceRemote {
			t.Errorf("%s: source annotation = %q", p.Name, p.Annotations[messages.ConfigSourceAnnotation])
		}
		if p.Spec.NodeName != "n1" || p.UID == "" || p.Annotations[DesiredKeyAnnotation] == "" {
			t.Errorf("%s: nodeName %q uid %q key %q", p.Name, p.Spec.NodeName, p.UID, p.Annotations[DesiredKeyAnnotation])
		}
		if p.Spec.RestartPolicy != v1.RestartPolicyAlways {
			t.Errorf("%s: not defaulted, restartPolicy %q", p.Name, p.Spec.RestartPolicy)
		}
	}
}

func TestChangesArriveInOrder(t *testing.T) {
	e := newEnv(t)
	const node, ns, name = "node-1.example.com", "team-a", "web.v2" // dotted names round-trip
	key := wire.DesiredNodeKey(node, ns, name)
	_, c := e.start(t, node, nil)
	c.waitUpdates(t, 1)

	e.put(t, key, podJSON(t, ns, name, "nginx:1.27"))
	c.waitUpdates(t, 2)
	e.put(t, key, podJSON(t, ns, name, "nginx:1.27")) // same content: no update
	e.put(t, key, podJSON(t, ns, name, "nginx:1.28"))
	c.waitUpdates(t, 3)
	e.put(t, key, podJSON(t, ns, name, "nginx:1.28", deleting(ptr(int64(7)))))
	c.waitUpdates(t, 4)
	e.put(t, key+"x", podJSON(t, ns, name+"x", "nginx:1.28", deleting(nil)))
	e.put(t, key+"x", podJSON(t, ns, name+"x", "nginx:1.28", deleting(nil)))
	c.waitUpdates(t, 5)
	e.del(t, key)
	got := c.waitUpdates(t, 6)

	wantOps := []messages.Op{messages.OpSet, messages.OpAdd, messages.OpUpdate, messages.OpDelete, messages.OpAdd, messages.OpRemove}
	for i, u := range got {
		if u.Op != wantOps[i] {
			t.Fatalf("update %d = %v, want %v (all: %v)", i, u, wantOps[i], got)
		}
	}
	add, update, del, remove := got[1].Pods[0], got[2].Pods[0], got[3].Pods[0], got[5].Pods[0]
	if add.Namespace != ns || add.Name != name || add.Spec.NodeName != node {
		t.Errorf("ADD pod = %s/%s on %q, want %s/%s on %q", add.Namespace, add.Name, add.Spec.NodeName, ns, name, node)
	}
	if update.Spec.Containers[0].Image != "nginx:1.28" {
		t.Errorf("UPDATE image = %q", update.Spec.Containers[0].Image)
	}
	if del.DeletionTimestamp == nil || del.DeletionGracePeriodSeconds == nil || *del.DeletionGracePeriodSeconds != 7 {
		t.Errorf("DELETE pod deletion = %v grace %v, want a timestamp and grace 7", del.DeletionTimestamp, del.DeletionGracePeriodSeconds)
	}
	if g := got[4].Pods[0].DeletionGracePeriodSeconds; g == nil || *g != 30 {
		t.Errorf("grace of a pod deleted without one = %v, want the termination grace 30", g)
	}
	if add.UID != update.UID || add.UID != del.UID || add.UID != remove.UID {
		t.Errorf("UID changed across updates: %s %s %s %s", add.UID, update.UID, del.UID, remove.UID)
	}
}

func TestFleetPodRunsOnlyWhereLabelsMatch(t *testing.T) {
	e := newEnv(t)
	_, edge := e.start(t, "edge-1", map[string]string{"role": "edge", "zone": "a"})
	_, core := e.start(t, "core-1", map[string]string{"role": "core", "zone": "a"})
	edge.waitUpdates(t, 1)
	core.waitUpdates(t, 1)

	key := wire.DesiredFleetKey("default", "agent")
	e.put(t, key, podJSON(t, "default", "agent", "agent:1", withSelector(map[string]string{"role": "edge"})))
	// A marker pod for core: once it arrives, the fleet put was seen too.
	e.putPod(t, "core-1", "marker", "m:1")
	got := edge.waitUpdates(t, 2)
	if got[1].Op != messages.OpAdd || got[1].Pods[0].Name != "agent" || got[1].Pods[0].Spec.NodeName != "edge-1" {
		t.Fatalf("edge got %v, want ADD agent", got[1])
	}
	got = core.waitUpdates(t, 2)
	if got[1].Pods[0].Name != "marker" {
		t.Fatalf("core got %v, want only the marker", got[1])
	}

	// Moving the pod to zone a's core nodes: edge removes it, core adds it.
	e.put(t, key, podJSON(t, "default", "agent", "agent:1", withSelector(map[string]string{"role": "core", "zone": "a"})))
	got = edge.waitUpdates(t, 3)
	if got[2].Op != messages.OpRemove || got[2].Pods[0].Name != "agent" {
		t.Errorf("edge got %v, want REMOVE agent", got[2])
	}
	got = core.waitUpdates(t, 3)
	if got[2].Op != messages.OpAdd || got[2].Pods[0].Name != "agent" || got[2].Pods[0].Spec.NodeName != "core-1" {
		t.Errorf("core got %v, want ADD agent", got[2])
	}
	if edgeUID, coreUID := edge.snapshot()[1].Pods[0].UID, got[2].Pods[0].UID; edgeUID == coreUID {
		t.Errorf("a fleet pod has the same UID %s on two nodes", edgeUID)
	}
}

func TestWritesWhileStoppedArriveInNextSet(t *testing.T) {
	e := newEnv(t)
	s, _ := e.startWithPod(t, "old")
	s.Stop()

	e.putPod(t, "n1", "new", "b:1")
	e.del(t, wire.DesiredNodeKey("n1", "default", "old"))

	_, c2 := e.start(t, "n1", nil)
	got := c2.waitUpdates(t, 1)[0]
	if got.Op != messages.OpSet || !reflect.DeepEqual(names(got.Pods), []string{"default/new"}) {
		t.Fatalf("after restart got %v %v, want SET [default/new]", got, names(got.Pods))
	}
}

func TestWatchSurvivesServerRestart(t *testing.T) {
	e := newEnv(t)
	_, c := e.startWithPod(t, "before")

	e.srv.Restart()
	// Written as soon as the server is back, possibly before the source's
	// connection has reconnected: it must still arrive, exactly once.
	writer := bustest.Connect(t, e.srv)
	kv, err := writer.JS.KeyValue(e.ctx, wire.DesiredBucket)
	if err != nil {
		t.Fatalf("desired bucket after restart: %v", err)
	}
	if _, err := kv.Put(e.ctx, wire.DesiredNodeKey("n1", "default", "after"), podJSON(t, "default", "after", "b:1")); err != nil {
		t.Fatal(err)
	}
	got := c.waitUpdates(t, 3)
	if got[2].Op != messages.OpAdd || got[2].Pods[0].Name != "after" {
		t.Fatalf("after restart got %v, want ADD after", got[2])
	}
	// And the watch keeps going.
	e.del(t, wire.DesiredNodeKey("n1", "default", "before"))
	got = c.waitUpdates(t, 4)
	if got[3].Op != messages.OpRemove || got[3].Pods[0].Name != "before" {
		t.Fatalf("got %v, want REMOVE before", got[3])
	}
}

func TestInvalidEntriesAreReportedAndSkipped(t *testing.T) {
	e := newEnv(t)
	bad := map[string]struct {
		value []byte
		want  string
	}{
		wire.DesiredNodeKey("n1", "default", "garbage"):  {[]byte("{not: [valid"), "payload is not JSON or YAML"},
		wire.DesiredNodeKey("n1", "default", "deploy"):   {[]byte(`{"apiVersion":"apps/v1","kind":"Deployment"}`), `kind is "Deployment", want Pod`},
		wire.DesiredNodeKey("n1", "default", "noimage"):  {podJSON(t, "default", "noimage", ""), "spec.containers[0].image: Required value"},
		wire.DesiredNodeKey("n1", "default", "mismatch"): {podJSON(t, "default", "other", "a:1"), "metadata names default/other"},
		wire.DesiredNodeKey("n1", "default", "many"):     {manyContainers(t, "default", "many", 1000), "MaxContainersPerPod"},
	}
	for key, b := range bad {
		e.put(t, key, b.value) // before start: part of the initial values
	}
	_, c := e.start(t, "n1", nil)
	if got := c.waitUpdates(t, 1)[0]; got.Op != messages.OpSet || len(got.Pods) != 0 {
		t.Fatalf("first update = %v, want an empty SET", got)
	}
	// And after start: a malformed key, then a valid pod that must arrive.
	e.put(t, "node.n1.default", podJSON(t, "default", "x", "a:1"))
	e.putPod(t, "n1", "good", "a:1")
	if got := c.waitUpdates(t, 2)[1]; got.Op != messages.OpAdd || got.Pods[0].Name != "good" {
		t.Fatalf("got %v, want ADD good", got)
	}
	if err := c.invalidErr("node.n1.default"); err == nil {
		t.Error("malformed key not reported")
	}
	for key, b := range bad {
		err := c.invalidErr(key)
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: OnInvalid error = %v, want %q", key, err, b.want)
		}
		dk, _ := wire.ParseDesiredKey(key)
		st := e.status(t, "n1", dk.Namespace, dk.Name)
		if st == nil || st.Status.Phase != v1.PodFailed || st.Status.Reason != FailedValidationReason || !strings.Contains(st.Status.Message, b.want) {
			t.Errorf("%s: status entry = %+v, want Failed/FailedValidation mentioning %q", key, st, b.want)
		}
	}
	c.mu.Lock()
	events := strings.Join(c.events, "\n")
	c.mu.Unlock()
	if !strings.Contains(events, "Warning FailedValidation default/noimage: Rejected desired pod node.n1.default.noimage: ") {
		t.Errorf("events do not report noimage:\n%s", events)
	}

	// Fixing a bad key delivers the pod and clears its failed status.
	e.putPod(t, "n1", "noimage", "a:1")
	if got := c.waitUpdates(t, 3)[2]; got.Op != messages.OpAdd || got.Pods[0].Name != "noimage" {
		t.Fatalf("got %v, want ADD noimage", got)
	}
	if st := e.status(t, "n1", "default", "noimage"); st != nil {
		t.Errorf("FailedValidation status not cleared: %+v", st.Status)
	}
	// Deleting a bad key clears its failed status too.
	e.del(t, wire.DesiredNodeKey("n1", "default", "garbage"))
	testutil.Eventually(t, waitFor, func() error {
		if st := e.status(t, "n1", "default", "garbage"); st != nil {
			return fmt.Errorf("status still %+v", st.Status)
		}
		return nil
	})
}

// manyContainers is a pod with n containers.
func manyContainers(t *testing.T, namespace, name string, n int) []byte {
	t.Helper()
	pod := v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	for i := 0; i < n; i++ {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: fmt.Sprintf("c%d", i), Image: "a:1"})
	}
	data, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestInvalidUpdateKeepsTheRunningPod(t *testing.T) {
	e := newEnv(t)
	key := wire.DesiredNodeKey("n1", "default", "web")
	e.put(t, key, podJSON(t, "default", "web", "a:1"))
	_, c := e.start(t, "n1", nil)
	c.waitUpdates(t, 1)

	e.put(t, key, podJSON(t, "default", "web", ""))
	testutil.Eventually(t, waitFor, func() error {
		if c.invalidErr(key) == nil {
			return fmt.Errorf("not reported yet")
		}
		return nil
	})
	e.put(t, key, podJSON(t, "default", "web", "a:2"))
	got := c.waitUpdates(t, 2)
	if got[1].Op != messages.OpUpdate || got[1].Pods[0].Spec.Containers[0].Image != "a:2" {
		t.Fatalf("got %v, want UPDATE to a:2 (no REMOVE for the invalid write)", got[1])
	}
	if st := e.status(t, "n1", "default", "web"); st != nil {
		t.Errorf("a running pod got a FailedValidation status: %+v", st.Status)
	}
}
