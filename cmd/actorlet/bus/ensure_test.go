package bus_test

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/actorlet/actorlet/cmd/actorlet/bus"
	"github.com/actorlet/actorlet/cmd/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/messages/wire"
)

var errNotYet = errors.New("not yet")

func TestEnsureProtocolIdempotent(t *testing.T) {
	srv := bustest.StartServer(t, bustest.ServerOptions{})
	c := bustest.Connect(t, srv)
	ctx := testContext(t)

	for i := 0; i < 2; i++ {
		if err := c.EnsureProtocol(ctx); err != nil {
			t.Fatalf("EnsureProtocol #%d: %v", i+1, err)
		}
	}
	// Data survives a second run.
	kv, err := c.JS.KeyValue(ctx, wire.DesiredBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, wire.DesiredNodeKey("n1", "default", "web"), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	// Drift is repaired: someone lowered the desired history.
	cfg := bus.ProtocolBuckets()[0]
	cfg.History = 2
	if _, err := c.JS.UpdateKeyValue(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := c.EnsureProtocol(ctx); err != nil {
		t.Fatalf("EnsureProtocol after drift: %v", err)
	}

	wantHistory := map[string]int64{wire.DesiredBucket: 5, wire.StatusBucket: 1, wire.NodesBucket: 1}
	for bucket, want := range wantHistory {
		kv, err := c.JS.KeyValue(ctx, bucket)
		if err != nil {
			t.Fatalf("bucket %s: %v", bucket, err)
		}
		st, err := kv.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.History() != want || st.Config().Replicas != 1 {
			t.Errorf("bucket %s: history %d replicas %d, want history %d replicas 1", bucket, st.History(), st.Config().Replicas, want)
		}
		if bucket == wire.DesiredBucket && st.Values() != 1 {
			t.Errorf("desired bucket holds %d values, want the 1 written", st.Values())
		}
	}
	stream, err := c.JS.Stream(ctx, wire.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	sc := stream.CachedInfo().Config
	if sc.MaxAge != time.Hour || sc.Discard != jetstream.DiscardOld || sc.Retention != jetstream.LimitsPolicy ||
		len(sc.Subjects) != 1 || sc.Subjects[0] != "actorlet.events.>" {
		t.Errorf("events stream config = %+v", sc)
	}
	// Events published on an event subject are kept.
	if _, err := c.JS.Publish(ctx, wire.EventSubject("n1", "default", "web"), []byte(`{}`)); err != nil {
		t.Fatalf("publish event: %v", err)
	}
}
