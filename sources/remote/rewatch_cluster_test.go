package remote

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/messages/wire/busauth"
	"github.com/actorlet/actorlet/node/publish"
	"github.com/actorlet/actorlet/test/testutil"
)

// TestServerRestartRemovesNoPod (issue 18): on a 3-server cluster secured
// and configured as docs/fleet.md says for a hub (leaf-node listeners),
// a server is restarted while a node's source runs — the server the node
// is connected to, the desired stream's leader, the node consumer's
// leader — and then a new desired pod of the node is written (once the
// server is back, or while it is down). The new pod
// is added and no running pod is removed: every key is still in the
// bucket. (Before the fix, the pull request of the read the reconnect
// stopped took the re-read's messages, the new write looked like the end
// of a complete read, and every other pod of the node was removed.)
func TestServerRestartRemovesNoPod(t *testing.T) {
	const node, pods = "n1", 12
	cl := bustest.StartClusterWith(t, 3, bustest.ClusterOptions{Secure: true, Leaf: true})
	admin := cl.ConnectWithProtocol(t, "operator", 3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // nine restarts, on a loaded machine
	defer cancel()
	nodeConn := cl.ConnectNode(t, node)
	statuses, err := publish.NewStatusPublisher(publish.StatusConfig{JS: nodeConn.JS, NodeName: node})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(statuses.Stop)
	kv, err := admin.JS.KeyValue(ctx, wire.DesiredBucket)
	if err != nil {
		t.Fatal(err)
	}
	put := func(name string) {
		t.Helper()
		key := wire.DesiredNodeKey(node, "default", name)
		// A write right after a restart may meet a cluster still electing
		// (and one sent while the writer reconnects may get no answer at
		// all): each attempt is bounded.
		testutil.Eventually(t, 60*time.Second, func() error {
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			_, err := kv.Put(pctx, key, podJSON(t, "default", name, "img:1"))
			return err
		})
	}
	for i := 0; i < pods; i++ {
		put(fmt.Sprint("p", i))
	}
	c := &collector{invalid: map[string]error{}}
	s, err := Start(ctx, Config{Bus: nodeConn, NodeName: node, Out: c.out, Statuses: statuses, Recorder: c, OnInvalid: c.onInvalid})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	if u := c.waitUpdates(t, 1); u[0].Op != messages.OpSet || len(u[0].Pods) != pods {
		t.Fatalf("first update %v, want a SET of %d pods", u, pods)
	}
	added := 0
	// restart stops server i and starts it again, before the new write or
	// (down) after it: the write then lands while the server is away.
	restart := func(what string, pick func() int, down bool) {
		t.Helper()
		// Each fault is one server away from a healthy cluster: stopping
		// a server while the one restarted before still catches up could
		// leave a stream without a quorum, a second fault. The server is
		// picked once the cluster is healthy (leaders may move until then).
		cl.WaitHealthy()
		i := pick()
		if i < 0 {
			t.Fatalf("no server is %s", what)
		}
		t.Logf("restarting %s (%s; write while down: %v)", cl.ServerName(i), what, down)
		cl.Stop(i)
		if !down {
			cl.Start(i)
			cl.WaitMetaLeader()
		}
		cl.WaitStreamLeader(busauth.DesiredStream)
		name := fmt.Sprint("new", added)
		put(name)
		added++
		if down {
			cl.Start(i)
			cl.WaitMetaLeader()
		}
		testutil.Eventually(t, waitFor*3, func() error {
			for _, u := range c.snapshot() {
				if u.Op == messages.OpAdd && len(u.Pods) == 1 && u.Pods[0].Name == name {
					return nil
				}
			}
			return fmt.Errorf("no ADD of %s after restarting %s", name, what)
		})
		for _, u := range c.snapshot() {
			if u.Op == messages.OpRemove {
				t.Fatalf("after restarting %s, a pod whose key is in the bucket was removed: %v", what, names(u.Pods))
			}
		}
	}
	for _, down := range []bool{false, true} {
		restart("the node's server", func() int { return cl.ServerOf("node-" + node) }, down)
		restart("the desired stream's leader", func() int { return cl.StreamLeader(busauth.DesiredStream) }, down)
		restart("the node consumer's leader", func() int {
			return cl.ConsumerLeader(busauth.DesiredStream, wire.NodeDesiredConsumer(node))
		}, down)
	}
	for i := 0; i < cl.Size(); i++ {
		restart("server "+fmt.Sprint(i), func() int { return i }, false)
	}
}
