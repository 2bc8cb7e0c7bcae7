package bus_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/actorlet/actorlet/bus"
	"github.com/actorlet/actorlet/bus/bustest"
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
	// An operator's change is kept by agents: someone lowered the desired
	// history; EnsureProtocol leaves it, Bootstrap restores it.
	cfg := bus.ProtocolBuckets(bus.ProtocolSettings{})[0]
	cfg.History = 2
	if _, err := c.JS.UpdateKeyValue(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := c.EnsureProtocol(ctx); err != nil {
		t.Fatalf("EnsureProtocol after drift: %v", err)
	}
	if st, err := kv.Status(ctx); err != nil || st.History() != 2 {
		t.Fatalf("EnsureProtocol changed an operator's history: %v %v", st, err)
	}
	res, err := bus.Bootstrap(ctx, c.JS, bus.ProtocolSettings{})
	if err != nil {
		t.Fatalf("Bootstrap: %v", err)
	}
	if len(res) != 6 || res[0].Name != wire.DesiredBucket || res[0].Action != "updated" || res[1].Action != "unchanged" {
		t.Errorf("Bootstrap results = %+v, want the desired bucket updated and the rest unchanged", res)
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

func TestEnsureProtocolRepairsOnlyEventSubjects(t *testing.T) {
	srv := bustest.StartServer(t, bustest.ServerOptions{})
	c := bustest.Connect(t, srv)
	ctx := testContext(t)
	// An operator created the stream with another age and a subject of
	// their own, but without the protocol's subjects.
	cfg := bus.EventsStreamConfig(bus.ProtocolSettings{})
	cfg.Subjects = []string{"ops.audit"}
	cfg.MaxAge = 2 * time.Hour
	if _, err := c.JS.CreateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := c.EnsureProtocol(ctx); err != nil {
		t.Fatal(err)
	}
	stream, err := c.JS.Stream(ctx, wire.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	got := stream.CachedInfo().Config
	if len(got.Subjects) != 2 || got.Subjects[0] != "ops.audit" || got.Subjects[1] != bus.EventsSubjects || got.MaxAge != 2*time.Hour {
		t.Errorf("stream after EnsureProtocol: subjects %v maxAge %s; want the operator's subject and age kept and %s added", got.Subjects, got.MaxAge, bus.EventsSubjects)
	}
}

func TestProtocolSettingsLimits(t *testing.T) {
	long := strings.Repeat("x", bus.MaxPlacementTag+1)
	for _, tc := range []struct {
		s    bus.ProtocolSettings
		want string
	}{
		{bus.ProtocolSettings{Replicas: 6}, "replicas 6"},
		{bus.ProtocolSettings{Replicas: -1}, "replicas -1"},
		{bus.ProtocolSettings{Tags: []string{""}}, "placement tag"},
		{bus.ProtocolSettings{Tags: []string{long}}, "placement tag"},
		{bus.ProtocolSettings{Tags: []string{"a b"}}, "placement tag"},
		{bus.ProtocolSettings{Tags: make([]string, bus.MaxPlacementTags+1)}, "at most 16"},
		{bus.ProtocolSettings{Cluster: long}, "placement cluster"},
		{bus.ProtocolSettings{EdgeNodes: []string{"a>b"}}, "edge node"},
		{bus.ProtocolSettings{EdgeNodes: []string{""}}, "edge node"},
		{bus.ProtocolSettings{EdgeNodes: make([]string, bus.MaxEdgeNodes+1)}, "at most 256"},
	} {
		err := tc.s.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want an error naming %q", tc.s, err, tc.want)
		}
	}
	if err := (bus.ProtocolSettings{Replicas: 3, Cluster: "c1", Tags: []string{"zone:a"}}).Validate(); err != nil {
		t.Errorf("valid settings rejected: %v", err)
	}
	// An agent asking for replicas on a single server fails clearly.
	srv := bustest.StartServer(t, bustest.ServerOptions{})
	c := bustest.Connect(t, srv)
	err := c.EnsureProtocolWith(testContext(t), bus.ProtocolSettings{Replicas: 3})
	if err == nil || !strings.Contains(err.Error(), "replicas 3") {
		t.Errorf("EnsureProtocolWith(replicas 3) on one server = %v, want an error naming the replicas", err)
	}
}
