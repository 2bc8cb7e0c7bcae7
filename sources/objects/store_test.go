package objects

import (
	"context"
	"encoding/json"
	"flag"
	"github.com/actorlet/actorlet/messages/wire"
	"os"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/cmd/actorlet/bus"
	"github.com/actorlet/actorlet/cmd/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/test/testutil"
)

func TestMain(m *testing.M) {
	flag.Parse()
	testutil.QuietKlog("")
	os.Exit(m.Run())
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
// losing the good ones.
func TestStoreScopesAndUpdates(t *testing.T) {
	srv := bustest.StartServer(t, bustest.ServerOptions{})
	conn := bustest.ConnectWithProtocol(t, srv)
	put(t, conn, wire.ConfigMapsBucket, wire.ObjectFleetKey("default", "app"), cm("default", "app", "fleet"))
	put(t, conn, wire.ConfigMapsBucket, wire.ObjectNodeKey("other", "default", "theirs"), cm("default", "theirs", "x"))
	var ch changes
	s, err := Start(context.Background(), conn, "n1", ch.add)
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
