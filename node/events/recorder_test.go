package events

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/test/testutil"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// startJetStream runs an in-process nats-server with JetStream on a random
// port and the events stream, shut down at cleanup.
func startJetStream(t *testing.T) jetstream.JetStream {
	t.Helper()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(5 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: wire.EventsStream, Subjects: []string{wire.EventSubjectPrefix + ".>"}}); err != nil {
		t.Fatal(err)
	}
	return js
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Until(t, 5*time.Second, what, cond)
}

type stored struct {
	subject string
	event   v1.Event
}

// streamEvents reads every message of the events stream.
func streamEvents(t *testing.T, js jetstream.JetStream) []stored {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, wire.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []stored
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		var ev v1.Event
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			t.Fatalf("message %d is not an event: %v", seq, err)
		}
		out = append(out, stored{m.Subject, ev})
	}
	return out
}

func testPod() *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web.1", Namespace: "prod", UID: "uid-1"}}
}

func TestEventsLandOnTheStreamWithCountDedup(t *testing.T) {
	js := startJetStream(t)
	fc := clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	r := NewRecorder(js, "node.a", WithClock(fc), WithDedupWindow(time.Minute))
	t.Cleanup(r.Stop)

	pod := testPod()
	r.Eventf(pod, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s", "c")
	fc.Step(10 * time.Second)
	r.Eventf(pod, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s", "c")
	r.Eventf(pod, v1.EventTypeNormal, "Started", "Started container %s", "c")
	fc.Step(2 * time.Minute) // outside the window: a new event
	r.Eventf(pod, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s", "c")
	r.Eventf(nil, v1.EventTypeNormal, "NodeReady", "Node %s is ready", "node.a")

	var got []stored
	eventually(t, "5 events on the stream", func() bool { got = streamEvents(t, js); return len(got) == 5 })

	podSubject := wire.EventSubject("node.a", "prod", "web.1")
	first, second, started, third, node := got[0], got[1], got[2], got[3], got[4]
	for i, s := range got[:4] {
		if s.subject != podSubject {
			t.Errorf("event %d subject %q, want %q", i, s.subject, podSubject)
		}
	}
	if first.event.Count != 1 || second.event.Count != 2 || first.event.Name != second.event.Name {
		t.Errorf("repeat not folded: counts %d,%d names %q,%q", first.event.Count, second.event.Count, first.event.Name, second.event.Name)
	}
	if !second.event.FirstTimestamp.Equal(&first.event.FirstTimestamp) || !second.event.LastTimestamp.After(first.event.LastTimestamp.Time) {
		t.Errorf("repeat timestamps first %v→%v, last %v→%v", first.event.FirstTimestamp, second.event.FirstTimestamp, first.event.LastTimestamp, second.event.LastTimestamp)
	}
	if started.event.Count != 1 || started.event.Type != v1.EventTypeNormal || started.event.Message != "Started container c" {
		t.Errorf("started event %+v", started.event)
	}
	if third.event.Count != 1 || third.event.Name == first.event.Name {
		t.Errorf("event outside the window should be new: count %d name %q", third.event.Count, third.event.Name)
	}
	ev := first.event
	if ev.InvolvedObject.Kind != "Pod" || ev.InvolvedObject.Namespace != "prod" || ev.InvolvedObject.Name != "web.1" || ev.InvolvedObject.UID != "uid-1" ||
		ev.Reason != "BackOff" || ev.Type != v1.EventTypeWarning || ev.Source.Component != Component || ev.Source.Host != "node.a" || ev.Namespace != "prod" {
		t.Errorf("pod event fields wrong: %+v", ev)
	}
	if node.subject != wire.EventSubject("node.a", "", "") || node.event.InvolvedObject.Kind != "Node" || node.event.InvolvedObject.Name != "node.a" || node.event.Namespace != "default" {
		t.Errorf("node event %q %+v", node.subject, node.event.InvolvedObject)
	}
	if s := r.Stats(); s.Published != 5 || s.Dropped != 0 || s.Failed != 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestInvalidTypeIsDropped(t *testing.T) {
	p := &blockingPublisher{release: make(chan struct{})}
	close(p.release)
	r := newRecorder(p, "n")
	r.Eventf(testPod(), "Fatal", "X", "x")
	r.Stop()
	if s := r.Stats(); s.Published != 0 {
		t.Errorf("event of unknown type published: %+v", s)
	}
}

// blockingPublisher holds every publish until release is closed.
type blockingPublisher struct {
	release chan struct{}
	fail    bool
}

func (b *blockingPublisher) Publish(string, []byte) error {
	<-b.release
	if b.fail {
		return nats.ErrConnectionClosed
	}
	return nil
}

func TestEventfNeverBlocksAndDropsWhenFull(t *testing.T) {
	p := &blockingPublisher{release: make(chan struct{})}
	r := newRecorder(p, "n", WithQueueSize(2))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 50 {
			r.Eventf(testPod(), v1.EventTypeNormal, "Pulled", "image %d", i)
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Eventf blocked on a stuck publisher")
	}
	// One in flight, two queued, the rest dropped.
	if d := r.Stats().Dropped; d < 47 {
		t.Errorf("dropped %d, want at least 47", d)
	}
	close(p.release)
	r.Stop()
	s := r.Stats()
	if s.Published+s.Dropped != 50 {
		t.Errorf("stats %+v: published+dropped should be 50", s)
	}
	r.Eventf(nil, v1.EventTypeNormal, "Late", "after stop")
	if r.Stats().Dropped != s.Dropped+1 {
		t.Error("event after Stop not counted as dropped")
	}
}

func TestPublishFailuresAreCounted(t *testing.T) {
	p := &blockingPublisher{release: make(chan struct{}), fail: true}
	close(p.release)
	r := newRecorder(p, "n")
	r.Eventf(nil, v1.EventTypeWarning, "X", "x")
	r.Stop()
	if s := r.Stats(); s.Failed != 1 || s.Published != 0 {
		t.Errorf("stats %+v, want one failure", s)
	}
}

// capturingPublisher keeps what is published.
type capturingPublisher struct {
	mu   sync.Mutex
	data [][]byte
}

func (c *capturingPublisher) Publish(_ string, data []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.data = append(c.data, data)
	return nil
}

func TestHugeMessageIsCut(t *testing.T) {
	p := &capturingPublisher{}
	r := newRecorder(p, "n")
	r.Eventf(testPod(), v1.EventTypeWarning, "Failed", "Error: %s", strings.Repeat("x", 2<<20))
	r.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.data) != 1 {
		t.Fatalf("%d events published, want 1", len(p.data))
	}
	var ev v1.Event
	if err := json.Unmarshal(p.data[0], &ev); err != nil {
		t.Fatal(err)
	}
	if len(ev.Message) != MaxMessageBytes || !strings.HasSuffix(ev.Message, " ...") {
		t.Errorf("message of %d bytes, want %d ending with ...", len(ev.Message), MaxMessageBytes)
	}
}
