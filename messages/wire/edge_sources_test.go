package wire_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/test/testutil"
)

// TestHubEdgeSourcePinsSubjects: what a hub's source of an edge delivers
// lands among that edge's own subjects, whatever the edge sent. The edge's
// streams here hold entries for another node (n2) under every protocol
// prefix — what a compromised edge, whose own server applies the source's
// filter, could deliver — and the hub's copy, made with the hub's sources
// (Bootstrap with EdgeNodes), has them under e1 only.
func TestHubEdgeSourcePinsSubjects(t *testing.T) {
	srv := bustest.StartServer(t, bustest.ServerOptions{})
	c := bustest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	settings := wire.ProtocolSettings{EdgeNodes: []string{"e1"}}
	hubSources := map[string][]*jetstream.StreamSource{wire.EventsStream: wire.EventsStreamConfig(settings).Sources}
	for _, b := range wire.ProtocolBuckets(settings) {
		hubSources[wire.BucketStream(b.Bucket)] = b.Sources
	}
	for _, tc := range []struct {
		stream, prefix string
		forged         []string // subjects the edge delivers
		want           []string // subjects the hub stores
	}{
		{wire.BucketStream(wire.StatusBucket), "$KV." + wire.StatusBucket,
			[]string{"e1.ns.a", "n2.ns.forged", "n2", "n2.ns.a.b"},
			[]string{"e1.ns.a", "e1.ns.forged", "e1", "e1.ns.a.b"}},
		{wire.BucketStream(wire.NodesBucket), "$KV." + wire.NodesBucket,
			[]string{"e1", "n2", "n2.x"},
			[]string{"e1", "e1", "e1.x"}},
		{wire.EventsStream, wire.EventSubjectPrefix,
			[]string{"e1.ns.a", "n2.ns.forged", "n2._node._node"},
			[]string{"e1.ns.a", "e1.ns.forged", "e1._node._node"}},
	} {
		t.Run(tc.stream, func(t *testing.T) {
			if len(hubSources[tc.stream]) != 1 {
				t.Fatalf("hub sources of %s: %d, want 1 (e1)", tc.stream, len(hubSources[tc.stream]))
			}
			// The edge's stream, on this server (the hub's source, made
			// local: same transforms, no domain).
			edge := "EDGE_" + tc.stream
			if _, err := c.JS.CreateStream(ctx, jetstream.StreamConfig{Name: edge, Subjects: []string{tc.prefix + ".>"}}); err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.forged {
				if _, err := c.JS.Publish(ctx, tc.prefix+"."+s, []byte(s)); err != nil {
					t.Fatal(err)
				}
			}
			src := *hubSources[tc.stream][0]
			// The transforms only: no domain, and no consumer (the edge
			// agent makes it on its own server; here the source creates one).
			src.Name, src.Domain, src.External, src.Consumer = edge, "", nil, nil
			hub, err := c.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "HUB_" + tc.stream, Sources: []*jetstream.StreamSource{&src}})
			if err != nil {
				t.Fatalf("hub stream with the hub's transforms %+v: %v", src.SubjectTransforms, err)
			}
			var got []string
			testutil.EventuallyEvery(t, 10*time.Second, 20*time.Millisecond, func() error {
				got = got[:0]
				for seq := uint64(1); seq <= uint64(len(tc.forged)); seq++ {
					m, err := hub.GetMsg(ctx, seq)
					if err != nil {
						return fmt.Errorf("hub message %d: %w", seq, err)
					}
					got = append(got, m.Subject)
				}
				return nil
			})
			var want []string
			for _, s := range tc.want {
				want = append(want, tc.prefix+"."+s)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("the hub stored %q, want %q", got, want)
			}
		})
	}
}
