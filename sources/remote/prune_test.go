package remote

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/test/testutil"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/messages"
)

// A status an earlier run of the agent published for a pod whose key was
// deleted while the agent was away is pruned at the first snapshot; the
// statuses of desired pods, static pods and other nodes are kept.
func TestStaleStatusesArePrunedAtStart(t *testing.T) {
	e := newEnv(t)
	kv, err := e.conn.JS.KeyValue(e.ctx, wire.StatusBucket)
	if err != nil {
		t.Fatal(err)
	}
	seed := func(node, name, source string) {
		t.Helper()
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name,
			Annotations: map[string]string{messages.ConfigSourceAnnotation: source}}}
		pod.Status.Phase = v1.PodRunning
		data, _ := json.Marshal(pod)
		if _, err := kv.Put(e.ctx, wire.StatusKey(node, "default", name), data); err != nil {
			t.Fatal(err)
		}
	}
	seed("n1", "gone", messages.SourceRemote)
	seed("n1", "kept", messages.SourceRemote)
	seed("n1", "web-n1", messages.SourceFile)
	seed("n2", "gone", messages.SourceRemote)
	e.put(t, wire.DesiredNodeKey("n1", "default", "kept"), podJSON(t, "default", "kept", "a:1"))

	_, c := e.start(t, "n1", nil)
	c.waitUpdates(t, 1)
	testutil.Eventually(t, waitFor, func() error {
		if e.status(t, "n1", "default", "gone") != nil {
			return fmt.Errorf("the stale status of n1/default/gone is still there")
		}
		return nil
	})
	for _, k := range [][2]string{{"n1", "kept"}, {"n1", "web-n1"}, {"n2", "gone"}} {
		if e.status(t, k[0], "default", k[1]) == nil {
			t.Errorf("status %s/default/%s was pruned, want it kept", k[0], k[1])
		}
	}
}
