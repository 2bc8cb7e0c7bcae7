package objects

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/bus"
	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/messages/wire/busauth"
	"github.com/actorlet/actorlet/test/testutil"
)

func TestMain(m *testing.M) {
	testutil.Main(m, "")
}

type changes struct {
	mu  sync.Mutex
	got []Ref
}

func (c *changes) add(r Ref) { c.mu.Lock(); c.got = append(c.got, r); c.mu.Unlock() }
func (c *changes) has(r Ref) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, g := range c.got {
		if g == r {
			return true
		}
	}
	return false
}

func put(t *testing.T, conn *bus.Conn, bucket, key string, v any) {
	t.Helper()
	kv, err := conn.JS.KeyValue(context.Background(), bucket)
	if err != nil {
		t.Fatal(err)
	}
	data, ok := v.([]byte)
	if !ok {
		if data, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := kv.Put(context.Background(), key, data); err != nil {
		t.Fatal(err)
	}
}

func cm(ns, name, value string) *v1.ConfigMap {
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"k": value}}
}

// The store sees its node's scope and the fleet's (node-scoped wins), not
// other nodes', follows updates and deletes, and skips bad values without
// losing the good ones. It reads as node n1 on a secured bus (its own
// consumers, no right to create any); the operator writes.
func TestStoreScopesAndUpdates(t *testing.T) {
	srv := bustest.StartServer(t, bustest.ServerOptions{Secure: true})
	conn := bustest.ConnectWithProtocol(t, srv)
	node := bustest.ConnectNode(t, srv, "n1")
	put(t, conn, wire.ConfigMapsBucket, wire.ObjectFleetKey("default", "app"), cm("default", "app", "fleet"))
	put(t, conn, wire.ConfigMapsBucket, wire.ObjectNodeKey("other", "default", "theirs"), cm("default", "theirs", "x"))
	var ch changes
	s, err := Start(context.Background(), node, "n1", ch.add)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	testutil.Until(t, 10*time.Second, "store ready", s.Ready)
	if got, err := s.ConfigMap("default", "app"); err != nil || got.Data["k"] != "fleet" {
		t.Fatalf("fleet object = %v, %v", got, err)
	}
	if _, err := s.ConfigMap("default", "theirs"); !apierrors.IsNotFound(err) {
		t.Fatalf("another node's object: %v, want NotFound", err)
	}

	// The node-scoped object wins over the fleet one, and going back.
	put(t, conn, wire.ConfigMapsBucket, wire.ObjectNodeKey("n1", "default", "app"), cm("default", "app", "mine"))
	testutil.Until(t, 10*time.Second, "node-scoped value", func() bool {
		got, err := s.ConfigMap("default", "app")
		return err == nil && got.Data["k"] == "mine"
	})
	kv, _ := conn.JS.KeyValue(context.Background(), wire.ConfigMapsBucket)
	if err := kv.Delete(context.Background(), wire.ObjectNodeKey("n1", "default", "app")); err != nil {
		t.Fatal(err)
	}
	testutil.Until(t, 10*time.Second, "fleet value again", func() bool {
		got, err := s.ConfigMap("default", "app")
		return err == nil && got.Data["k"] == "fleet"
	})

	// Hostile values: not JSON, a name that does not match its key, an
	// invalid key; then a good Secret still arrives.
	put(t, conn, wire.SecretsBucket, wire.ObjectFleetKey("default", "junk"), []byte("{not json"))
	put(t, conn, wire.SecretsBucket, wire.ObjectFleetKey("default", "liar"), &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "other"}})
	put(t, conn, wire.SecretsBucket, wire.ObjectFleetKey("default", "badkey"), &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "badkey"}, Data: map[string][]byte{"../x": []byte("v")}})
	put(t, conn, wire.SecretsBucket, wire.ObjectFleetKey("default", "db"), &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"}, Data: map[string][]byte{"password": []byte("pw")}})
	testutil.Until(t, 10*time.Second, "good secret", func() bool {
		got, err := s.Secret("default", "db")
		return err == nil && string(got.Data["password"]) == "pw"
	})
	for _, name := range []string{"junk", "liar", "badkey"} {
		if _, err := s.Secret("default", name); !apierrors.IsNotFound(err) {
			t.Errorf("bad secret %s: %v, want NotFound", name, err)
		}
	}
	if !ch.has(Ref{Kind: "Secret", Namespace: "default", Name: "db"}) || !ch.has(Ref{Kind: "ConfigMap", Namespace: "default", Name: "app"}) {
		t.Errorf("changes = %v", ch.got)
	}
}

// A change of an immutable object written around actorletctl (a raw
// `nats kv put`) is ignored by the node, as the API server would refuse
// it; a delete is followed, and the name can then be created anew.
func TestStoreKeepsImmutableObjects(t *testing.T) {
	srv := bustest.StartServer(t, bustest.ServerOptions{Secure: true})
	conn := bustest.ConnectWithProtocol(t, srv)
	node := bustest.ConnectNode(t, srv, "n1")
	key := wire.ObjectFleetKey("default", "frozen")
	frozen := func(value string) *v1.ConfigMap {
		c := cm("default", "frozen", value)
		yes := true
		c.Immutable = &yes
		return c
	}
	put(t, conn, wire.ConfigMapsBucket, key, frozen("gold"))
	s, err := Start(context.Background(), node, "n1", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	testutil.Until(t, 10*time.Second, "store ready", s.Ready)
	put(t, conn, wire.ConfigMapsBucket, key, frozen("platinum"))
	// A later write to another key shows the changed one was seen.
	put(t, conn, wire.ConfigMapsBucket, wire.ObjectFleetKey("default", "marker"), cm("default", "marker", "m"))
	testutil.Until(t, 10*time.Second, "marker", func() bool { _, err := s.ConfigMap("default", "marker"); return err == nil })
	if got, err := s.ConfigMap("default", "frozen"); err != nil || got.Data["k"] != "gold" {
		t.Fatalf("immutable ConfigMap after a raw change = %v, %v; want the stored gold", got, err)
	}
	kv, _ := conn.JS.KeyValue(context.Background(), wire.ConfigMapsBucket)
	if err := kv.Delete(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	testutil.Until(t, 10*time.Second, "deleted", func() bool { _, err := s.ConfigMap("default", "frozen"); return apierrors.IsNotFound(err) })
	put(t, conn, wire.ConfigMapsBucket, key, frozen("platinum"))
	testutil.Until(t, 10*time.Second, "created anew", func() bool {
		got, err := s.ConfigMap("default", "frozen")
		return err == nil && got.Data["k"] == "platinum"
	})
}

// A node whose object buckets and consumers are not there yet starts its
// store anyway; the store picks the objects up once an operator creates
// them.
func TestStoreWaitsForBuckets(t *testing.T) {
	srv := bustest.StartServer(t, bustest.ServerOptions{Secure: true})
	admin := bustest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := admin.EnsurePodProtocolWith(ctx, wire.ProtocolSettings{}); err != nil {
		t.Fatal(err)
	}
	if err := busauth.EnsureNodeConsumers(ctx, admin.JS, "n1"); err != nil {
		t.Fatal(err)
	}
	creds, err := srv.Auth.IssueNode("n1")
	if err != nil {
		t.Fatal(err)
	}
	p := srv.Auth.NodeCredsPath("n1")
	if err := busauth.WriteCreds(p, creds); err != nil {
		t.Fatal(err)
	}
	node, err := bus.Connect(ctx, bus.Options{URL: srv.ClientURL(), CredsFile: p, InboxPrefix: busauth.NodeInboxPrefix("n1")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Close)
	// As the node: the object buckets cannot be created, and that is not
	// fatal to the store.
	denyCtx, denyCancel := context.WithTimeout(ctx, 2*time.Second)
	defer denyCancel()
	if err := node.EnsureObjectBuckets(denyCtx); err == nil {
		t.Fatal("a node created the object buckets")
	}
	s, err := Start(ctx, node, "n1", nil)
	if err != nil {
		t.Fatalf("Start without object buckets: %v", err)
	}
	t.Cleanup(s.Stop)
	if s.Ready() {
		t.Fatal("ready without buckets")
	}
	if err := admin.EnsureObjectBuckets(ctx); err != nil {
		t.Fatal(err)
	}
	if err := busauth.EnsureNodeObjectConsumers(ctx, admin.JS, "n1"); err != nil {
		t.Fatal(err)
	}
	put(t, admin, wire.SecretsBucket, wire.ObjectNodeKey("n1", "default", "db"), &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"}, Data: map[string][]byte{"password": []byte("pw")}})
	testutil.Until(t, 15*time.Second, "secret after provisioning", func() bool {
		got, err := s.Secret("default", "db")
		return s.Ready() && err == nil && string(got.Data["password"]) == "pw"
	})
}

// After the server restarts (the node reconnects), the store re-reads its
// consumers from the start and keeps following changes.
func TestStoreFollowsAfterReconnect(t *testing.T) {
	srv := bustest.StartServer(t, bustest.ServerOptions{Secure: true})
	admin := bustest.ConnectWithProtocol(t, srv)
	node := bustest.ConnectNode(t, srv, "n1")
	put(t, admin, wire.ConfigMapsBucket, wire.ObjectNodeKey("n1", "default", "app"), cm("default", "app", "v1"))
	s, err := Start(context.Background(), node, "n1", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	testutil.Until(t, 10*time.Second, "v1", func() bool {
		got, err := s.ConfigMap("default", "app")
		return err == nil && got.Data["k"] == "v1"
	})
	srv.Restart()
	testutil.Until(t, 15*time.Second, "both reconnected", func() bool {
		return node.NC.IsConnected() && admin.NC.IsConnected()
	})
	testutil.Until(t, 15*time.Second, "v2 after reconnect", func() bool {
		kv, err := admin.JS.KeyValue(context.Background(), wire.ConfigMapsBucket)
		if err != nil {
			return false
		}
		data, _ := json.Marshal(cm("default", "app", "v2"))
		if _, err := kv.Put(context.Background(), wire.ObjectNodeKey("n1", "default", "app"), data); err != nil {
			return false
		}
		got, err := s.ConfigMap("default", "app")
		return err == nil && got.Data["k"] == "v2"
	})
}
