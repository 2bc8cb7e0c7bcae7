package bus_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/actorlet/actorlet/bus"
	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/messages/wire/busauth"
)

// provision creates node's consumers and n desired keys of it.
func provision(ctx context.Context, t *testing.T, c *bus.Conn, node string, n int) {
	t.Helper()
	if err := busauth.EnsureNodeConsumers(ctx, c.JS, node); err != nil {
		t.Fatal(err)
	}
	kv, err := c.JS.KeyValue(ctx, wire.DesiredBucket)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if _, err := kv.Put(ctx, wire.DesiredNodeKey(node, "default", fmt.Sprint("p", i)), []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
}

// readStored reads the node's desired consumer the way a re-watch does:
// the keys of the stored entries (those before nil), then the live ones
// until want keys were seen (a cluster's consumer may be served from a
// copy a write has not reached yet: its stored entries are then a prefix,
// and the rest arrives live). It returns the keys, or the error that
// ended the read.
func readStored(ctx context.Context, t *testing.T, c *bus.Conn, node string, want int) ([]string, error) {
	t.Helper()
	w := startRead(ctx, t, c, node)
	defer w.Stop()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	seen := map[string]bool{}
	stored := false
	for !stored || len(seen) < want {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return nil, w.Err()
			}
			if e == nil {
				stored = true
				continue
			}
			seen[e.Key()] = true
		case <-rctx.Done():
			t.Fatalf("read %d keys (stored entries ended: %v), want %d: %v", len(seen), stored, want, rctx.Err())
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys, nil
}

// startRead starts a read of node's consumer, retried while it fails as
// the agent's re-watch retries it: a consumer just created on a cluster
// answers its lookup and resets only once it has a leader, which a loaded
// machine may take longer than one call's bound to elect.
func startRead(ctx context.Context, t *testing.T, c *bus.Conn, node string) *bus.ConsumerWatch {
	t.Helper()
	for {
		w, err := bus.WatchConsumer(ctx, c.JS, wire.DesiredBucket, wire.NodeDesiredConsumer(node))
		if err == nil {
			return w
		}
		if errors.Is(err, wire.ErrNotProvisioned) || ctx.Err() != nil {
			t.Fatal(err)
		}
		t.Logf("start of a read failed, retrying: %v", err)
		time.Sleep(200 * time.Millisecond)
	}
}

// TestSecondReadSeesEverything (issue 18): a read of the node's consumer
// right after (200 ms) an earlier read stopped sees every stored entry.
// On servers with leaf-node listeners (a hub), nats-server counts a pull
// request as wanted for 2 s after it arrived even when nobody listens on
// its inbox any more, so the waiting request of the stopped read took the
// replayed messages: the second read got nothing, or only the newest
// entry, and a live write then looked like the end of the stored entries.
func TestSecondReadSeesEverything(t *testing.T) {
	for _, kind := range []string{"server", "cluster", "hub"} {
		t.Run(kind, func(t *testing.T) {
			ctx := testContext(t)
			var c *bus.Conn
			switch kind {
			case "server":
				c = bustest.ConnectWithProtocol(t, bustest.StartServer(t, bustest.ServerOptions{}))
			case "cluster":
				c = bustest.StartCluster(t, 3).ConnectWithProtocol(t, "op", 3)
			case "hub":
				c = bustest.StartClusterWith(t, 3, bustest.ClusterOptions{Leaf: true}).ConnectWithProtocol(t, "op", 3)
			}
			const node, n = "n1", 10
			provision(ctx, t, c, node, n)
			for round := 0; round < 2; round++ {
				keys, err := readStored(ctx, t, c, node, n)
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				if len(keys) != n {
					t.Fatalf("round %d: read %d keys %v, want %d", round, len(keys), keys, n)
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
}

// TestWatchConsumerGapEndsRead: a pull request of another reader on the
// node's consumer takes some of the messages; the read never presents
// what it got as the whole stored state: it ends with ErrConsumerGap, or
// (when the other request happened to get nothing) lists every key.
func TestWatchConsumerGapEndsRead(t *testing.T) {
	srv := bustest.StartServer(t, bustest.ServerOptions{})
	c := bustest.ConnectWithProtocol(t, srv)
	ctx := testContext(t)
	const node, n = "n1", 50
	provision(ctx, t, c, node, n)
	other := bustest.Connect(t, srv)
	inbox := other.NC.NewInbox()
	stolen := make(chan *nats.Msg, 1000)
	if _, err := other.NC.ChanSubscribe(inbox, stolen); err != nil {
		t.Fatal(err)
	}
	subject := "$JS.API.CONSUMER.MSG.NEXT." + busauth.DesiredStream + "." + wire.NodeDesiredConsumer(node)
	// A waiting request, as a read in another process leaves one behind.
	if err := other.NC.PublishRequest(subject, inbox, []byte(`{"batch":10000,"expires":60000000000}`)); err != nil {
		t.Fatal(err)
	}
	if err := other.NC.Flush(); err != nil {
		t.Fatal(err)
	}
	gaps := 0
	for round := 0; round < 3; round++ {
		keys, err := readStored(ctx, t, c, node, n)
		switch {
		case errors.Is(err, bus.ErrConsumerGap):
			gaps++
		case err != nil:
			t.Fatalf("round %d: %v", round, err)
		case len(keys) != n:
			t.Fatalf("round %d: read %d keys as the whole state, want %d", round, len(keys), n)
		}
	}
	if gaps == 0 {
		t.Fatalf("no read saw the other reader's request take a message (%d taken)", len(stolen))
	}
	t.Logf("%d of 3 reads ended with a gap; the other reader took %d messages", gaps, len(stolen))
}

// TestReadGoesOnAfterConsumerLeaderChange: when the node's consumer gets
// a new leader (its server died, or a step-down), the read's waiting pull
// request is lost with the old one. The read hears nothing, asks again
// with a new request, and goes on with the new leader's deliveries,
// checked as every other (before, it ended, and the node re-watched: a
// lookup, two resets and the whole stream again).
func TestReadGoesOnAfterConsumerLeaderChange(t *testing.T) {
	ctx := testContext(t)
	c := bustest.StartCluster(t, 3).ConnectWithProtocol(t, "op", 3)
	const node, n = "n1", 5
	provision(ctx, t, c, node, n)
	w := startRead(ctx, t, c, node)
	defer w.Stop()
	next := func(what string) string {
		t.Helper()
		select {
		case e, ok := <-w.Updates():
			if !ok {
				t.Fatalf("%s: the read ended: %v", what, w.Err())
			}
			if e == nil {
				return ""
			}
			return e.Key()
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: nothing within 30 s", what)
		}
		return ""
	}
	for i := 0; i <= n; i++ { // the stored entries and their end (nil)
		next("stored entries")
	}
	// Let the consumer's delivered state reach its replicas, then move its
	// leadership.
	time.Sleep(2 * time.Second)
	subject := "$JS.API.CONSUMER.LEADER.STEPDOWN." + busauth.DesiredStream + "." + wire.NodeDesiredConsumer(node)
	resp, err := c.NC.Request(subject, nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(resp.Data), `"success":true`) {
		t.Fatalf("step-down: %s", resp.Data)
	}
	kv, err := c.JS.KeyValue(ctx, wire.DesiredBucket)
	if err != nil {
		t.Fatal(err)
	}
	key := wire.DesiredNodeKey(node, "default", "after")
	for {
		if _, err = kv.Put(ctx, key, []byte("{}")); err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got := next("the write after the step-down"); got != key {
		t.Fatalf("read %q, want %q", got, key)
	}
}
