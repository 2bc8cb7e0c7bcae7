package bus_test

import (
	"errors"
	"github.com/actorlet/actorlet/messages/wire"
	"testing"

	"github.com/actorlet/actorlet/bus"
	"github.com/actorlet/actorlet/bus/bustest"
)

func TestLeaderGet(t *testing.T) {
	srv := bustest.StartServer(t, bustest.ServerOptions{})
	c := bustest.ConnectWithProtocol(t, srv)
	ctx := testContext(t)
	kv, err := c.JS.KeyValue(ctx, wire.DesiredBucket)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := kv.Put(ctx, "node.n1.default.web", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := bus.LeaderGet(ctx, c.NC, "", wire.DesiredBucket, "node.n1.default.web")
	if err != nil || string(e.Value()) != "v1" || e.Revision() != rev || e.Key() != "node.n1.default.web" {
		t.Fatalf("LeaderGet = %v, %v; want v1 at revision %d", e, err, rev)
	}
	if err := kv.Delete(ctx, "node.n1.default.web"); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"node.n1.default.web", "node.n1.default.never"} {
		if _, err := bus.LeaderGet(ctx, c.NC, "", wire.DesiredBucket, key); !errors.Is(err, bus.ErrKeyGone) {
			t.Errorf("LeaderGet(%s) = %v, want ErrKeyGone", key, err)
		}
	}
}
