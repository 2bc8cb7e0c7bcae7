package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/actorlet/actorlet/bus"
	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/messages/wire/busauth"
)

// TestProtocolReplicasOnCluster: the first agent creates R3 buckets on a
// 3-server cluster; a later agent asking for 1 replica changes nothing;
// only an operator's Bootstrap moves replicas.
func TestProtocolReplicasOnCluster(t *testing.T) {
	cl := bustest.StartCluster(t, 3)
	ctx := testContext(t)
	first := cl.Connect(t, "first")
	if err := first.EnsureProtocolWith(ctx, wire.ProtocolSettings{Replicas: 3}); err != nil {
		t.Fatalf("EnsureProtocolWith(3): %v", err)
	}
	later := cl.Connect(t, "later")
	if err := later.EnsureProtocol(ctx); err != nil {
		t.Fatalf("EnsureProtocol on R3 buckets: %v", err)
	}
	replicas := func() map[string]int {
		got := map[string]int{}
		for _, b := range []string{wire.DesiredBucket, wire.StatusBucket, wire.NodesBucket, wire.ConfigMapsBucket, wire.SecretsBucket} {
			got[b] = bucketReplicas(ctx, t, later, b)
		}
		s, err := later.JS.Stream(ctx, wire.EventsStream)
		if err != nil {
			t.Fatal(err)
		}
		got[wire.EventsStream] = s.CachedInfo().Config.Replicas
		return got
	}
	for name, r := range replicas() {
		if r != 3 {
			t.Errorf("%s has %d replicas after an R1 agent started, want the 3 it was created with", name, r)
		}
	}
	// The operator lowers them deliberately.
	res, err := wire.Bootstrap(ctx, later.JS, wire.ProtocolSettings{Replicas: 2})
	if err != nil {
		t.Fatalf("Bootstrap(2): %v", err)
	}
	for _, r := range res {
		if r.Action != "updated" || r.Replicas != 2 {
			t.Errorf("Bootstrap result %+v, want updated to 2 replicas", r)
		}
	}
	for name, r := range replicas() {
		if r != 2 {
			t.Errorf("%s has %d replicas after Bootstrap(2)", name, r)
		}
	}
}

// TestObjectBucketsTakeTheFleetsReplicas: the ConfigMap and Secret buckets
// a `node add` creates (wire.EnsureObjectBuckets) get the replicas and
// placement of the desired bucket, never fewer (issue 18: they were R1 on
// an R3 fleet, and a ConfigMap apply failed while that one server was
// down).
func TestObjectBucketsTakeTheFleetsReplicas(t *testing.T) {
	cl := bustest.StartCluster(t, 3)
	ctx := testContext(t)
	op := cl.Connect(t, "operator")
	if err := op.EnsurePodProtocolWith(ctx, wire.ProtocolSettings{Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	if err := wire.EnsureObjectBuckets(ctx, op.JS); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{wire.ConfigMapsBucket, wire.SecretsBucket} {
		if r := bucketReplicas(ctx, t, op, b); r != 3 {
			t.Errorf("%s created with %d replicas on an R3 fleet, want 3", b, r)
		}
	}
}

// bucketReplicas is bucket's number of replicas.
func bucketReplicas(ctx context.Context, t *testing.T, c *bus.Conn, bucket string) int {
	t.Helper()
	kv, err := c.JS.KeyValue(ctx, bucket)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st.Config().Replicas
}

// TestNodeConsumersWaitForTheCluster: a node's consumers set up while the
// cluster has lost its quorum (two of three servers restarting) wait for
// it instead of failing with "JetStream system temporarily unavailable":
// an agent started then comes up once the servers are back rather than
// exiting (a chaos run saw agents exit so).
func TestNodeConsumersWaitForTheCluster(t *testing.T) {
	cl := bustest.StartCluster(t, 3)
	c := cl.ConnectWithProtocol(t, "op", 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl.Stop(1)
	cl.Stop(2)
	errc := make(chan error, 1)
	go func() { errc <- busauth.EnsureNodeConsumers(ctx, c.JS, "n1") }()
	select {
	case err := <-errc:
		t.Fatalf("returned while the cluster had no quorum: %v", err)
	case <-time.After(2 * time.Second):
	}
	cl.Start(1)
	cl.Start(2)
	if err := <-errc; err != nil {
		t.Fatalf("EnsureNodeConsumers once the servers were back: %v", err)
	}
}

// TestNodeConsumersOutliveRestarts: a node's consumers keep their state
// on disk, and outlive a rolling restart of every server (the node reads
// all its desired keys after it) and, on one server, the server's
// restart.
func TestNodeConsumersOutliveRestarts(t *testing.T) {
	const node, n = "n1", 10
	setUp := func(ctx context.Context, t *testing.T, c *bus.Conn) {
		provision(ctx, t, c, node, n)
		if err := wire.EnsureObjectBuckets(ctx, c.JS); err != nil {
			t.Fatal(err)
		}
		if err := busauth.EnsureNodeObjectConsumers(ctx, c.JS, node); err != nil {
			t.Fatal(err)
		}
	}
	read := func(ctx context.Context, t *testing.T, c *bus.Conn, after string) {
		t.Helper()
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		keys, err := readStored(rctx, t, c, node, n)
		if err != nil || len(keys) != n {
			t.Fatalf("%s: read %d keys (%v), want %d", after, len(keys), err, n)
		}
	}
	t.Run("cluster", func(t *testing.T) {
		cl := bustest.StartCluster(t, 3)
		c := cl.ConnectWithProtocol(t, "op", 3)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		setUp(ctx, t, c)
		consumersOnDisk(ctx, t, c, node)
		read(ctx, t, c, "provisioned")
		for i := range cl.Size() {
			cl.WaitHealthy()
			cl.Stop(i)
			cl.Start(i)
		}
		cl.WaitHealthy()
		read(ctx, t, c, "every server restarted in turn")
		consumersOnDisk(ctx, t, c, node)
	})
	t.Run("server", func(t *testing.T) {
		s := bustest.StartServer(t, bustest.ServerOptions{})
		c := bustest.ConnectWithProtocol(t, s)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		setUp(ctx, t, c)
		consumersOnDisk(ctx, t, c, node)
		s.Restart()
		read(ctx, t, c, "the server restarted")
		consumersOnDisk(ctx, t, c, node)
	})
}

// consumersOnDisk checks that every consumer of node keeps its state on
// disk. A lookup is retried while the cluster elects the consumer's
// leader.
func consumersOnDisk(ctx context.Context, t *testing.T, c *bus.Conn, node string) {
	t.Helper()
	for _, set := range []map[string]jetstream.ConsumerConfig{busauth.NodeConsumers(node), busauth.NodeObjectConsumers(node)} {
		for stream, cfg := range set {
			for {
				co, err := c.JS.Consumer(ctx, stream, cfg.Durable)
				if err == nil {
					if co.CachedInfo().Config.MemoryStorage {
						t.Errorf("consumer %s on %s keeps its state in memory, want on disk", cfg.Durable, stream)
					}
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("look up consumer %s on %s: %v", cfg.Durable, stream, err)
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
	}
}
