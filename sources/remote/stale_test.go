package remote

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/node/publish"
)

// entry is a desired-bucket entry as a watch delivers it, at a chosen
// revision: what a copy of the stream that is behind would deliver cannot
// be produced on demand by a real server.
type entry struct {
	key   string
	value []byte
	rev   uint64
	op    jetstream.KeyValueOp
}

func (e entry) Bucket() string                  { return wire.DesiredBucket }
func (e entry) Key() string                     { return e.key }
func (e entry) Value() []byte                   { return e.value }
func (e entry) Revision() uint64                { return e.rev }
func (e entry) Created() time.Time              { return time.Unix(1700000000, 0) }
func (e entry) Delta() uint64                   { return 0 }
func (e entry) Operation() jetstream.KeyValueOp { return e.op }

// TestStaleSnapshotRemovesNothing: a re-watch whose snapshot comes from a
// copy of the stream that is behind what the node applied removes no pod;
// the keys it lacks are decided once the watch reaches their revision.
func TestStaleSnapshotRemovesNothing(t *testing.T) {
	const node = "n1"
	e := newEnv(t)
	nodeConn := bustest.ConnectNode(t, e.srv, node)
	statuses, err := publish.NewStatusPublisher(publish.StatusConfig{JS: nodeConn.JS, NodeName: node})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(statuses.Stop)
	key := func(name string) string { return wire.DesiredNodeKey(node, "default", name) }
	put := func(name string, rev uint64) entry {
		return entry{key: key(name), value: podJSON(t, "default", name, "img:1"), rev: rev, op: jetstream.KeyValuePut}
	}
	del := func(name string, rev uint64) entry {
		return entry{key: key(name), rev: rev, op: jetstream.KeyValueDelete}
	}
	snapshot := func(es ...entry) map[string]jetstream.KeyValueEntry {
		m := map[string]jetstream.KeyValueEntry{}
		for _, e := range es {
			m[e.key] = e
		}
		return m
	}
	start := func() (*Source, *collector) {
		c := &collector{invalid: map[string]error{}}
		cfg := Config{Bus: nodeConn, NodeName: node, Out: c.out, Statuses: statuses, Recorder: c}
		if err := cfg.validate(); err != nil {
			t.Fatal(err)
		}
		s := newSource(cfg, nil, func() {})
		// The first watch: a (rev 3), b (rev 5), c (rev 7).
		s.applyInitial(e.ctx, snapshot(put("a", 3), put("b", 5), put("c", 7)))
		if u := c.waitUpdates(t, 1); u[0].Op != messages.OpSet || len(u[0].Pods) != 3 {
			t.Fatalf("first snapshot: %v, want a SET of 3 pods", u)
		}
		return s, c
	}
	removed := func(c *collector) []string {
		var out []string
		for _, u := range c.snapshot()[1:] {
			if u.Op == messages.OpRemove {
				out = append(out, names(u.Pods)...)
			}
		}
		return out
	}
	ctx := context.Background()

	t.Run("stale copy catches up", func(t *testing.T) {
		s, c := start()
		// Re-watch on a copy at revision 4: a, and an old tombstone of b
		// (b was re-created at 5); c not there yet.
		s.applyInitial(ctx, snapshot(put("a", 3), del("b", 4)))
		if r := removed(c); len(r) > 0 {
			t.Fatalf("a stale snapshot removed %v", r)
		}
		// The copy catches up: the watch delivers 5 (b) and 7 (c), then 8.
		for _, le := range []entry{put("b", 5), put("c", 7), put("d", 8)} {
			s.apply(ctx, le)
		}
		if r := removed(c); len(r) > 0 {
			t.Fatalf("removed %v after the copy caught up with every key", r)
		}
		if len(s.unconfirmed) > 0 {
			t.Fatalf("keys still unconfirmed: %v", s.unconfirmed)
		}
	})
	t.Run("key really gone", func(t *testing.T) {
		s, c := start()
		// A copy at revision 9 without c: c was purged.
		s.applyInitial(ctx, snapshot(put("a", 3), put("b", 5), put("e", 9)))
		if r := removed(c); len(r) != 1 || r[0] != "default/c" {
			t.Fatalf("removed %v, want default/c at once", r)
		}
	})
	t.Run("stale copy, key gone meanwhile", func(t *testing.T) {
		s, c := start()
		s.applyInitial(ctx, snapshot(put("a", 3), put("b", 5)))
		if r := removed(c); len(r) > 0 {
			t.Fatalf("a stale snapshot removed %v", r)
		}
		s.apply(ctx, put("e", 6))
		if r := removed(c); len(r) > 0 {
			t.Fatalf("removed %v before the watch reached c's revision 7", r)
		}
		s.apply(ctx, put("f", 10)) // past 7 and no c: it was purged
		if r := removed(c); len(r) != 1 || r[0] != "default/c" {
			t.Fatalf("removed %v, want default/c once the watch passed its revision", r)
		}
	})
}
