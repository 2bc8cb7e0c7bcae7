package bus_test

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/actorlet/actorlet/bus"
	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/messages/wire/busauth"
)

// A listing through a consumer never read before sees what was written just
// before it. nats-server counts a consumer's pending messages as the stream
// signals them, after the write is acknowledged, and a reset to the
// sequence the consumer is already at does not recount them: trusting that
// count listed nothing now and then under load (publish's
// TestPruneStaleAndDeleteIf, 2 in 40). The race is rare on an idle
// machine; this runs the sequence many times.
func TestConsumerKeysRightAfterWrites(t *testing.T) {
	srv := bustest.StartServer(t, bustest.ServerOptions{})
	c := bustest.Connect(t, srv)
	ctx := testContext(t)
	if err := c.EnsureProtocol(ctx); err != nil {
		t.Fatal(err)
	}
	kv, err := c.JS.KeyValue(ctx, wire.StatusBucket)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		node := fmt.Sprintf("n%d", i)
		cfg := busauth.NodeConsumers(node)[busauth.StatusStream]
		if _, err := c.JS.CreateConsumer(ctx, busauth.StatusStream, cfg); err != nil {
			t.Fatal(err)
		}
		// Other nodes' writes queue signals ahead of this node's one.
		for j := 0; j < 20; j++ {
			if _, err := kv.Put(ctx, wire.StatusKey("other", "default", fmt.Sprint(j)), []byte("{}")); err != nil {
				t.Fatal(err)
			}
		}
		key := wire.StatusKey(node, "default", "web")
		if _, err := kv.Put(ctx, key, []byte("{}")); err != nil {
			t.Fatal(err)
		}
		keys, err := bus.ConsumerKeys(ctx, c.JS, wire.StatusBucket, wire.NodeStatusConsumer(node))
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != 1 || keys[0] != key {
			t.Fatalf("round %d: listed %v right after writing %s", i, keys, key)
		}
		if err := c.JS.DeleteConsumer(ctx, busauth.StatusStream, cfg.Durable); err != nil && err != jetstream.ErrConsumerNotFound {
			t.Fatal(err)
		}
	}
}
