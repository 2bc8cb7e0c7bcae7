package bus_test

import (
	"context"
	"testing"
	"time"

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
