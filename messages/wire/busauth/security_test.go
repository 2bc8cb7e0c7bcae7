package busauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/bus"
	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/messages/wire/busauth"
	"github.com/actorlet/actorlet/node/commands"
	"github.com/actorlet/actorlet/test/testutil"
)

func TestMain(m *testing.M) {
	flag.Parse()
	testutil.QuietKlog("")
	os.Exit(m.Run())
}

// denyWait bounds a request the server refuses (it never answers one; the
// refusal itself is checked through the violation it reports).
const denyWait = 500 * time.Millisecond

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// nodeConn is a raw client with node's credentials and inbox prefix.
func nodeConn(t *testing.T, srv *bustest.Server, node string) (*nats.Conn, jetstream.JetStream, *bustest.Violations) {
	t.Helper()
	creds := srv.NodeCreds(t, node)
	v := &bustest.Violations{}
	nc, err := bustest.Dial(t, srv, nats.UserCredentials(creds), nats.CustomInboxPrefix(busauth.NodeInboxPrefix(node)), nats.ErrorHandler(v.Handler))
	if err != nil {
		t.Fatalf("connect as %s: %v", node, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js, v
}

// seed writes desired pods for n1, n2 and the fleet, and a status of n2.
func seed(t *testing.T, admin *bus.Conn) {
	t.Helper()
	ctx := testCtx(t)
	desired, err := admin.JS.KeyValue(ctx, wire.DesiredBucket)
	if err != nil {
		t.Fatal(err)
	}
	status, err := admin.JS.KeyValue(ctx, wire.StatusBucket)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{wire.DesiredNodeKey("n1", "default", "a"), wire.DesiredNodeKey("n2", "default", "secret"), wire.DesiredFleetKey("default", "f")} {
		if _, err := desired.Put(ctx, k, []byte(`{"metadata":{"name":"x"}}`)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := status.Put(ctx, wire.StatusKey("n2", "default", "secret"), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	// ConfigMaps and Secrets: n1's, n2's and a fleet-wide one of each.
	for _, bucket := range []string{wire.ConfigMapsBucket, wire.SecretsBucket} {
		kv, err := admin.JS.KeyValue(ctx, bucket)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{wire.ObjectNodeKey("n1", "default", "mine"), wire.ObjectNodeKey("n2", "default", "secret"), wire.ObjectFleetKey("default", "shared")} {
			if _, err := kv.Put(ctx, k, []byte(`{"metadata":{"name":"x"}}`)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestUnauthenticatedClientRefused(t *testing.T) {
	srv := bustest.StartServer(t, bustest.ServerOptions{Secure: true})
	if _, err := bustest.Dial(t, srv); err == nil || !strings.Contains(err.Error(), "Authorization Violation") {
		t.Fatalf("anonymous connect: err = %v, want an authorization violation", err)
	}
	if _, err := bustest.Dial(t, srv, nats.UserInfo("admin", "admin")); err == nil {
		t.Fatal("user/password accepted by an operator-mode server")
	}
}

// TestNodeIsolation checks every way the issue found for one node's
// credentials to reach another node.
func TestNodeIsolation(t *testing.T) {
	srv := bustest.StartServer(t, bustest.ServerOptions{Secure: true})
	admin := bustest.ConnectWithProtocol(t, srv)
	srv.NodeCreds(t, "n2")
	seed(t, admin)
	nc, js, v := nodeConn(t, srv, "n1")
	ctx := testCtx(t)

	// Its own desired keys and the fleet keys, through its own consumer.
	keys, err := bus.ConsumerKeys(ctx, js, wire.DesiredBucket, wire.NodeDesiredConsumer("n1"))
	if err != nil {
		t.Fatalf("n1 reads its own consumer: %v", err)
	}
	want := map[string]bool{wire.DesiredNodeKey("n1", "default", "a"): true, wire.DesiredFleetKey("default", "f"): true}
	if len(keys) != len(want) || !want[keys[0]] || !want[keys[1]] {
		t.Fatalf("n1 sees keys %v, want exactly %v", keys, want)
	}

	// n2's desired key: not by direct get, not through n2's consumer.
	if _, err := nc.Request("$JS.API.DIRECT.GET."+busauth.DesiredStream+".$KV."+wire.DesiredBucket+"."+wire.DesiredNodeKey("n2", "default", "secret"), nil, denyWait); err == nil {
		t.Error("n1 read n2's desired key by direct get")
	}
	v.Expect(t, "$JS.API.DIRECT.GET."+busauth.DesiredStream+".$KV."+wire.DesiredBucket+"."+wire.DesiredNodeKey("n2", "default", "secret"))
	if _, err := nc.Request("$JS.API.STREAM.MSG.GET."+busauth.DesiredStream, []byte(`{"last_by_subj":"$KV.actorlet_desired.node.n2.default.secret"}`), denyWait); err == nil {
		t.Error("n1 read n2's desired key by message get")
	}
	v.Expect(t, "$JS.API.STREAM.MSG.GET."+busauth.DesiredStream)
	dctx, cancel := context.WithTimeout(ctx, denyWait)
	if _, err := bus.ConsumerKeys(dctx, js, wire.DesiredBucket, wire.NodeDesiredConsumer("n2")); err == nil {
		t.Error("n1 read n2's consumer")
	}
	cancel()
	v.Expect(t, "$JS.API.CONSUMER.INFO."+busauth.DesiredStream+"."+wire.NodeDesiredConsumer("n2"))
	if _, err := nc.Request("$JS.API.CONSUMER.MSG.NEXT."+busauth.DesiredStream+"."+wire.NodeDesiredConsumer("n2"), []byte(`{"batch":10}`), denyWait); err == nil {
		t.Error("n1 pulled from n2's consumer")
	}

	// ConfigMaps and Secrets: its own and the fleet's through its own
	// consumer on each bucket; n2's node-scoped ones not by direct get, not
	// by message get, not through n2's consumer, not by a watch.
	for _, bucket := range []string{wire.ConfigMapsBucket, wire.SecretsBucket} {
		stream := wire.BucketStream(bucket)
		keys, err := bus.ConsumerKeys(ctx, js, bucket, wire.NodeObjectConsumer("n1"))
		if err != nil {
			t.Fatalf("n1 reads its own %s consumer: %v", bucket, err)
		}
		want := map[string]bool{wire.ObjectNodeKey("n1", "default", "mine"): true, wire.ObjectFleetKey("default", "shared"): true}
		if len(keys) != len(want) || !want[keys[0]] || !want[keys[1]] {
			t.Fatalf("n1 sees %s keys %v, want exactly %v", bucket, keys, want)
		}
		theirs := "$KV." + bucket + "." + wire.ObjectNodeKey("n2", "default", "secret")
		if _, err := nc.Request("$JS.API.DIRECT.GET."+stream+"."+theirs, nil, denyWait); err == nil {
			t.Errorf("n1 read n2's %s key by direct get", bucket)
		}
		v.Expect(t, "$JS.API.DIRECT.GET."+stream+"."+theirs)
		if _, err := nc.Request("$JS.API.DIRECT.GET."+stream, []byte(`{"last_by_subj":"`+theirs+`"}`), denyWait); err == nil {
			t.Errorf("n1 read n2's %s key by direct get with a body", bucket)
		}
		v.Expect(t, "$JS.API.DIRECT.GET."+stream)
		if _, err := nc.Request("$JS.API.STREAM.MSG.GET."+stream, []byte(`{"last_by_subj":"`+theirs+`"}`), denyWait); err == nil {
			t.Errorf("n1 read n2's %s key by message get", bucket)
		}
		v.Expect(t, "$JS.API.STREAM.MSG.GET."+stream)
		octx, cancel := context.WithTimeout(ctx, denyWait)
		if _, err := bus.ConsumerKeys(octx, js, bucket, wire.NodeObjectConsumer("n2")); err == nil {
			t.Errorf("n1 read n2's %s consumer", bucket)
		}
		cancel()
		v.Expect(t, "$JS.API.CONSUMER.INFO."+stream+"."+wire.NodeObjectConsumer("n2"))
		if _, err := nc.Request("$JS.API.CONSUMER.MSG.NEXT."+stream+"."+wire.NodeObjectConsumer("n2"), []byte(`{"batch":10}`), denyWait); err == nil {
			t.Errorf("n1 pulled from n2's %s consumer", bucket)
		}
		v.Expect(t, "$JS.API.CONSUMER.MSG.NEXT."+stream+"."+wire.NodeObjectConsumer("n2"))
		okv, err := js.KeyValue(ctx, bucket)
		if err != nil {
			t.Fatalf("n1 binds to %s: %v", bucket, err)
		}
		wctx, cancel := context.WithTimeout(ctx, denyWait)
		if w, err := okv.Watch(wctx, wire.ObjectNodeWatch("n2")); err == nil {
			select {
			case e := <-w.Updates():
				if e != nil {
					t.Errorf("n1 watched %s and got %s", bucket, e.Key())
				}
			case <-wctx.Done():
			}
			_ = w.Stop()
		}
		cancel()
		cctx, cancel := context.WithTimeout(ctx, denyWait)
		_, err = js.CreateOrUpdateConsumer(cctx, stream, jetstream.ConsumerConfig{Durable: "evil", FilterSubject: "$KV." + bucket + ".>"})
		cancel()
		if err == nil {
			t.Errorf("n1 created a consumer on %s", stream)
		}
		v.Expect(t, "$JS.API.CONSUMER.CREATE."+stream+".evil.$KV."+bucket+".>")
	}

	// No consumer of its own making: not the ordered one a KV watch
	// creates, not a push consumer delivering to n2's exec subject.
	kv, err := js.KeyValue(ctx, wire.DesiredBucket)
	if err != nil {
		t.Fatalf("n1 binds to the desired bucket: %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, denyWait)
	if w, err := kv.Watch(wctx, ">"); err == nil {
		select {
		case e := <-w.Updates():
			if e != nil {
				t.Errorf("n1 watched the desired bucket and got %s", e.Key())
			}
		case <-wctx.Done():
		}
		_ = w.Stop()
	}
	cancel()
	cctx, cancel := context.WithTimeout(ctx, denyWait)
	_, err = js.CreateOrUpdateConsumer(cctx, busauth.DesiredStream, jetstream.ConsumerConfig{
		Durable: "evil", DeliverSubject: wire.CommandSubject("n2", "exec"), FilterSubject: "$KV." + wire.DesiredBucket + ".>",
	})
	cancel()
	if err == nil {
		t.Error("n1 created a push consumer delivering to n2's exec subject")
	}
	v.Expect(t, "$JS.API.CONSUMER.CREATE."+busauth.DesiredStream+".evil.$KV."+wire.DesiredBucket+".>")
	if names := consumerNames(t, admin); len(names) != 2*4 {
		t.Errorf("consumers on the server: %v, want only the 8 provisioned ones", names)
	}

	// Writes: its own status yes, n2's status and n2's desired keys no.
	if _, err := js.Publish(ctx, "$KV."+wire.StatusBucket+"."+wire.StatusKey("n1", "default", "a"), []byte(`{}`)); err != nil {
		t.Errorf("n1 writes its own status: %v", err)
	}
	pctx, cancel := context.WithTimeout(ctx, denyWait)
	if _, err := js.Publish(pctx, "$KV."+wire.StatusBucket+"."+wire.StatusKey("n2", "default", "secret"), []byte(`{"forged":true}`)); err == nil {
		t.Error("n1 wrote n2's status")
	}
	cancel()
	v.Expect(t, "$KV."+wire.StatusBucket+"."+wire.StatusKey("n2", "default", "secret"))
	for _, subj := range []string{
		"$KV." + wire.DesiredBucket + "." + wire.DesiredNodeKey("n2", "default", "evil"),
		"$KV." + wire.DesiredBucket + "." + wire.DesiredFleetKey("default", "evil"),
		"$KV." + wire.NodesBucket + ".n2",
		wire.StatusSubject("n2", "default", "secret"),
		wire.EventSubject("n2", "", ""),
		wire.CommandSubject("n2", "exec"),
	} {
		if err := nc.Publish(subj, []byte(`{"name":"x","command":["id"]}`)); err != nil {
			t.Fatal(err)
		}
		v.Expect(t, subj)
	}
	status, err := admin.JS.KeyValue(ctx, wire.StatusBucket)
	if err != nil {
		t.Fatal(err)
	}
	if e, err := status.Get(ctx, wire.StatusKey("n2", "default", "secret")); err != nil || string(e.Value()) != `{}` {
		t.Errorf("n2's status after n1's attempts: %v, %v", e, err)
	}

	// Subscriptions: not n2's commands, not anyone's replies.
	for _, subj := range []string{wire.CommandSubject("n2", ">"), wire.CommandSubject("n2", "exec"), "_INBOX.>", busauth.NodeInboxPrefix("n2") + ".>", ">", "$KV.>"} {
		if _, err := nc.SubscribeSync(subj); err != nil {
			t.Fatal(err)
		}
		v.Expect(t, subj)
	}
}

// execNode is a commands.Node that only counts execs.
type execNode struct{ execs atomic.Int32 }

func (n *execNode) ListPods(context.Context) ([]*v1.Pod, error) { return nil, nil }
func (n *execNode) DescribePod(context.Context, string, string) (*wire.Description, error) {
	return nil, wire.NotFound("pod")
}
func (n *execNode) LogPath(context.Context, string, string, string, bool) (string, error) {
	return "", wire.NotFound("pod")
}
func (n *execNode) Exec(context.Context, string, string, string, []string, time.Duration) ([]byte, []byte, int, error) {
	n.execs.Add(1)
	return []byte("ran"), nil, 0, nil
}
func (n *execNode) Restart(context.Context, string, string, string) error { return nil }
func (n *execNode) Evict(context.Context, string, string, *int64, string) error {
	return nil
}

// TestNodeCannotRedirectDeliveries: a pull request's reply subject is where
// JetStream delivers, and nothing stops n1 from naming n2's exec subject,
// after writing the payload into its own desired key. The delivery carries
// a $JS.ACK reply, and n2's command service (running with n2's
// credentials) drops it: n2 never runs n1's command, while an operator's
// exec still runs.
func TestNodeCannotRedirectDeliveries(t *testing.T) {
	srv := bustest.StartServer(t, bustest.ServerOptions{Secure: true})
	admin := bustest.ConnectWithProtocol(t, srv)
	n2 := bustest.ConnectNode(t, srv, "n2")
	victim := &execNode{}
	svc, err := commands.StartService(n2.NC, victim, commands.ServiceOptions{NodeName: "n2"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	nc, js, _ := nodeConn(t, srv, "n1")
	ctx := testCtx(t)
	seen := make(chan *nats.Msg, 10)
	sub, err := admin.NC.ChanSubscribe(wire.CommandSubject("n2", "exec"), seen)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := admin.NC.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "$KV."+wire.DesiredBucket+"."+wire.DesiredNodeKey("n1", "default", "x"), []byte(`{"name":"victim","command":["id"]}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := js.ResetConsumerToSequence(ctx, busauth.DesiredStream, wire.NodeDesiredConsumer("n1"), 1); err != nil {
		t.Fatal(err)
	}
	if err := nc.PublishRequest("$JS.API.CONSUMER.MSG.NEXT."+busauth.DesiredStream+"."+wire.NodeDesiredConsumer("n1"), wire.CommandSubject("n2", "exec"), []byte(`{"batch":1}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-seen:
		if !strings.HasPrefix(m.Reply, "$JS.ACK.") {
			t.Fatalf("redirected delivery has reply %q; the command service only drops $-replies", m.Reply)
		}
	case <-time.After(10 * time.Second):
		t.Log("the server did not deliver the redirected message at all")
	}
	// An operator's request after it is served: the redirected one was
	// handled (dropped) before it, on the same subscription.
	c := &wire.Client{NC: admin.NC, Timeout: 10 * time.Second}
	if _, err := c.Exec(ctx, "n2", wire.ExecRequest{Name: "web", Command: []string{"true"}}); err != nil {
		t.Fatalf("operator exec on n2: %v", err)
	}
	if n := victim.execs.Load(); n != 1 {
		t.Fatalf("n2 ran exec %d times, want 1 (the operator's only)", n)
	}
}

func consumerNames(t *testing.T, admin *bus.Conn) []string {
	t.Helper()
	var names []string
	for _, stream := range []string{busauth.DesiredStream, busauth.StatusStream, busauth.ConfigMapsStream, busauth.SecretsStream} {
		st, err := admin.JS.Stream(testCtx(t), stream)
		if err != nil {
			t.Fatal(err)
		}
		l := st.ConsumerNames(testCtx(t))
		for n := range l.Name() {
			names = append(names, n)
		}
		if l.Err() != nil {
			t.Fatal(l.Err())
		}
	}
	return names
}

// TestOperatorCanDoEverything runs what docs/protocol.md documents as an
// operator: buckets, keys, watches, events, commands, provisioning.
func TestOperatorCanDoEverything(t *testing.T) {
	srv := bustest.StartServer(t, bustest.ServerOptions{Secure: true})
	admin := bustest.ConnectWithProtocol(t, srv)
	ctx := testCtx(t)
	if err := busauth.EnsureNodeConsumers(ctx, admin.JS, "n9"); err != nil {
		t.Fatalf("provision: %v", err)
	}
	for _, b := range []string{wire.DesiredBucket, wire.StatusBucket, wire.NodesBucket} {
		kv, err := admin.JS.KeyValue(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		w, err := kv.WatchAll(ctx)
		if err != nil {
			t.Fatalf("watch %s: %v", b, err)
		}
		if _, err := kv.Put(ctx, "node.n9.default.web", []byte(`{}`)); err != nil {
			t.Fatalf("put in %s: %v", b, err)
		}
		if _, err := kv.Get(ctx, "node.n9.default.web"); err != nil {
			t.Fatalf("get from %s: %v", b, err)
		}
		for e := range w.Updates() {
			if e != nil {
				break
			}
		}
		_ = w.Stop()
		if err := kv.Delete(ctx, "node.n9.default.web"); err != nil {
			t.Fatalf("delete in %s: %v", b, err)
		}
	}
	if _, err := admin.JS.Publish(ctx, wire.EventSubject("n9", "default", "web"), []byte(`{}`)); err != nil {
		t.Fatalf("event: %v", err)
	}
	cons, err := admin.JS.OrderedConsumer(ctx, wire.EventsStream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatalf("read events: %v", err)
	}
	if _, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second)); err != nil {
		t.Fatalf("read events: %v", err)
	}
	// Requests to a node and replies back.
	sub, err := admin.NC.Subscribe(wire.CommandSubject("n9", "pods.list"), func(m *nats.Msg) { _ = m.Respond([]byte(`{"pods":[]}`)) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if m, err := admin.NC.Request(wire.CommandSubject("n9", "pods.list"), []byte(`{}`), 5*time.Second); err != nil || !json.Valid(m.Data) {
		t.Fatalf("command request: %v", err)
	}
}

// TestRevocationCutsNodeOffLive revokes a connected node: the server closes
// its connection at once and refuses it afterwards, with no restart.
func TestRevocationCutsNodeOffLive(t *testing.T) {
	srv := bustest.StartServer(t, bustest.ServerOptions{Secure: true})
	bustest.ConnectWithProtocol(t, srv)
	creds := srv.NodeCreds(t, "n1")
	closed := make(chan struct{})
	var once sync.Once
	nc, err := bustest.Dial(t, srv, nats.UserCredentials(creds), nats.CustomInboxPrefix(busauth.NodeInboxPrefix("n1")),
		nats.DisconnectErrHandler(func(*nats.Conn, error) { once.Do(func() { close(closed) }) }))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := srv.Auth.RevokeNode("n1"); err != nil || n != 1 {
		t.Fatalf("RevokeNode = %d, %v", n, err)
	}
	sys, err := bustest.Dial(t, srv, nats.UserCredentials(srv.SystemCreds()))
	if err != nil {
		t.Fatalf("system account connect: %v", err)
	}
	if err := srv.Auth.PushAccount(testCtx(t), sys); err != nil {
		t.Fatalf("push: %v", err)
	}
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("revoked node still connected")
	}
	_ = nc
	if _, err := bustest.Dial(t, srv, nats.UserCredentials(creds)); err == nil {
		t.Fatal("revoked credentials accepted")
	}
	// The revocation is in the server config too: a restart keeps it.
	srv.Restart()
	if _, err := bustest.Dial(t, srv, nats.UserCredentials(creds)); err == nil {
		t.Fatal("revoked credentials accepted after a server restart")
	}
	// A new key for the same node works.
	if _, err := bustest.Dial(t, srv, nats.UserCredentials(srv.NodeCreds(t, "n1"))); err != nil {
		t.Fatalf("re-provisioned node: %v", err)
	}
}

// TestNodeAcceptsHandMadeBuckets: buckets made with the by-hand commands of
// docs/protocol.md (no description) satisfy a node, which has no right to
// update them and does not try.
func TestNodeAcceptsHandMadeBuckets(t *testing.T) {
	srv := bustest.StartServer(t, bustest.ServerOptions{Secure: true})
	admin := bustest.Connect(t, srv)
	ctx := testCtx(t)
	for _, cfg := range wire.ProtocolBuckets(wire.ProtocolSettings{}) {
		cfg.Description = ""
		if _, err := admin.JS.CreateKeyValue(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	sc := wire.EventsStreamConfig(wire.ProtocolSettings{})
	sc.Description = ""
	if _, err := admin.JS.CreateStream(ctx, sc); err != nil {
		t.Fatal(err)
	}
	node := bustest.ConnectNode(t, srv, "n1")
	if err := node.EnsureProtocol(ctx); err != nil {
		t.Fatalf("EnsureProtocol with node credentials on hand-made buckets: %v", err)
	}
	if err := busauth.EnsureNodeConsumers(ctx, node.JS, "n1"); err != nil {
		t.Fatalf("EnsureNodeConsumers with node credentials on provisioned consumers: %v", err)
	}
}

// TestEdgeUplinkPinnedLikeANode: with an edge node's uplink credentials
// (used here as a client's: the same subjects it may send into the hub),
// every write outside its own keys, status and events is refused by the
// hub — its own included, since an edge's keys reach the hub only through
// the hub's sources — and so is every JetStream API request but the resets
// of its own consumers. (The same credentials carry a real edge's uplink
// in test/integration/cluster: TestEdgeNodePartition,
// TestEdgeObjectsAndEvents.)
func TestEdgeUplinkPinnedLikeANode(t *testing.T) {
	srv := bustest.StartServer(t, bustest.ServerOptions{Secure: true})
	admin := bustest.ConnectWithProtocol(t, srv)
	seed(t, admin)
	creds, err := srv.Auth.IssueEdgeUplink("e1", "hub")
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/e1.uplink.creds"
	if err := busauth.WriteCreds(path, creds); err != nil {
		t.Fatal(err)
	}
	v := &bustest.Violations{}
	nc, err := bustest.Dial(t, srv, nats.UserCredentials(path), nats.ErrorHandler(v.Handler))
	if err != nil {
		t.Fatal(err)
	}
	for _, subj := range []string{
		"$KV." + wire.DesiredBucket + ".node.e1.default.x", "$KV." + wire.DesiredBucket + ".node.n2.default.x", "$KV." + wire.DesiredBucket + ".fleet.default.x",
		"$KV." + wire.StatusBucket + ".e1.default.x", "$KV." + wire.StatusBucket + ".n2.default.x",
		"$KV." + wire.NodesBucket + ".e1", "$KV." + wire.NodesBucket + ".n2",
		"$KV." + wire.SecretsBucket + ".fleet.default.x", "$KV." + wire.ConfigMapsBucket + ".node.e1.default.x",
		"actorlet.events.e1.default.x", "actorlet.events.n2.default.x", "actorlet.status.n2.default.x",
		wire.EdgeUpSubject("n2", busauth.StatusStream), wire.EdgeDownSubject("e1", busauth.DesiredStream),
		wire.CommandSubject("n2", wire.VerbExec), wire.CommandSubject("e1", wire.VerbExec),
		"$JS.API.CONSUMER.CREATE." + busauth.DesiredStream, "$JS.hub.API.CONSUMER.CREATE." + busauth.DesiredStream + ".x",
		"$JS.hub.API.STREAM.MSG.GET." + busauth.DesiredStream, "$JS.API.STREAM.MSG.GET." + busauth.DesiredStream,
		"$JS.hub.API.DIRECT.GET." + busauth.DesiredStream + ".$KV." + wire.DesiredBucket + ".node.n2.default.secret",
		"$JS.hub.API.CONSUMER.RESET." + busauth.DesiredStream + "." + wire.EdgeConsumer("n2"),
		"$JS.hub.API.CONSUMER.RESET." + busauth.DesiredStream + "." + wire.NodeDesiredConsumer("n1"),
		"$JS.hub.API.STREAM.UPDATE." + busauth.StatusStream,
	} {
		if err := nc.Publish(subj, []byte(`{"evil":true}`)); err != nil {
			t.Fatal(err)
		}
		v.Expect(t, subj)
	}
	for _, subj := range []string{"$KV.>", "_INBOX.>", wire.CommandSubject("n2", ">"), wire.EdgeDownSubject("n2", busauth.DesiredStream), "actorlet.events.>"} {
		if _, err := nc.SubscribeSync(subj); err != nil {
			t.Fatal(err)
		}
		v.Expect(t, subj)
	}
	// What it is for: its own deliveries up, the resets of its own
	// consumers (the hub answers those).
	allowed := []string{wire.EdgeUpSubject("e1", busauth.StatusStream), "$JS.hub.API.CONSUMER.RESET." + busauth.DesiredStream + "." + wire.EdgeConsumer("e1"),
		"_INBOX.abc.1", busauth.OperatorInboxPrefix("alice") + ".abc.1"} // command answers (no allow_responses across a leaf)
	for _, subj := range allowed {
		if err := nc.Publish(subj, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(denyWait) // a violation would have arrived by now
	for _, subj := range allowed {
		if v.Has(subj) {
			t.Errorf("%s refused", subj)
		}
	}
	// Nothing was written.
	kv, err := admin.JS.KeyValue(testCtx(t), wire.DesiredBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(testCtx(t), "node.n2.default.x"); err == nil {
		t.Fatal("the uplink wrote a desired key")
	}
}

// A node whose consumers no operator made is told so by
// EnsureNodeConsumers at the refusal of its create, not retried until its
// deadline as a create with no answer from a cluster still electing is
// (the chaos test's operator once met one right after bootstrap, and was
// told its node was not provisioned).
func TestUnprovisionedNodeIsTold(t *testing.T) {
	srv := bustest.StartServer(t, bustest.ServerOptions{Secure: true})
	bustest.ConnectWithProtocol(t, srv)
	creds, err := srv.Auth.IssueNode("n9")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "n9.creds")
	if err := busauth.WriteCreds(path, creds); err != nil {
		t.Fatal(err)
	}
	nc, err := bustest.Dial(t, srv, nats.UserCredentials(path), nats.CustomInboxPrefix(busauth.NodeInboxPrefix("n9")))
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	err = busauth.EnsureNodeConsumers(ctx, js, "n9")
	if !errors.Is(err, wire.ErrNotProvisioned) || strings.Contains(err.Error(), "gave up") {
		t.Fatalf("EnsureNodeConsumers of an unprovisioned node: %v, want ErrNotProvisioned at the refusal, not retried until the deadline", err)
	}
	t.Logf("told after %s: %v", time.Since(start).Round(time.Millisecond), err)
}
