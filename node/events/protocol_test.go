package events

import (
	"fmt"
	"testing"
	"time"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/test/testutil"

	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/nats-io/nats.go"
	v1 "k8s.io/api/core/v1"
)

// TestEventsStreamFromEnsureProtocol checks pod and node events land on the
// stream EnsureProtocol creates, published without asking for an ack (no
// reply subject: the stream sends none).
func TestEventsStreamFromEnsureProtocol(t *testing.T) {
	srv := bustest.StartServer(t, bustest.ServerOptions{})
	conn := bustest.ConnectWithProtocol(t, srv)
	seen := make(chan *nats.Msg, 10)
	sub, err := conn.NC.ChanSubscribe("actorlet.events.>", seen)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	r := NewRecorder(conn.JS, "node-2")
	t.Cleanup(r.Stop)

	r.Eventf(testPod(), v1.EventTypeNormal, "Scheduled", "Pod accepted")
	r.Eventf(nil, v1.EventTypeWarning, "PLEGUnhealthy", "relist stalled")
	testutil.Eventually(t, 5*time.Second, func() error {
		got := streamEvents(t, conn.JS)
		if len(got) != 2 {
			return fmt.Errorf("%d events on the stream", len(got))
		}
		if got[0].subject != wire.EventSubject("node-2", "prod", "web.1") || got[1].subject != wire.EventSubject("node-2", "", "") {
			return fmt.Errorf("subjects %q, %q", got[0].subject, got[1].subject)
		}
		return nil
	})
	if s := r.Stats(); s.Published != 2 {
		t.Errorf("stats %+v", s)
	}
	for range 2 {
		select {
		case m := <-seen:
			if m.Reply != "" {
				t.Errorf("event on %s asks for an ack on %q", m.Subject, m.Reply)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("an event did not reach a subscriber")
		}
	}
}
