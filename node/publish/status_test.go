package publish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/wire"
)

const testNode = "node.1"

func statusPod(name string, uid types.UID, phase v1.PodPhase, msg string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: uid},
		Status:     v1.PodStatus{Phase: phase, Message: msg},
	}
}

func newPublisher(t *testing.T, cfg StatusConfig) *StatusPublisher {
	t.Helper()
	p, err := NewStatusPublisher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// startStatusPublisher starts a server with the status bucket and a
// publisher of testNode on it.
func startStatusPublisher(t *testing.T) (jetstream.JetStream, jetstream.KeyValue, *StatusPublisher) {
	t.Helper()
	_, js := startServer(t).connect()
	kv := createBucket(t, js, wire.StatusBucket)
	return js, kv, newPublisher(t, StatusConfig{JS: js, NodeName: testNode})
}

// getPod reads a pod from the status bucket; nil when the key is absent.
func getPod(t *testing.T, kv jetstream.KeyValue, name string) *v1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e, err := kv.Get(ctx, wire.StatusKey(testNode, "default", name))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	var p v1.Pod
	if err := json.Unmarshal(e.Value(), &p); err != nil {
		t.Fatalf("status of %s is not a pod: %v", name, err)
	}
	return &p
}

// subjectLog records messages on the status subjects.
type subjectLog struct {
	mu   sync.Mutex
	msgs map[string][]v1.Pod
	at   map[string]time.Time // first arrival per subject
}

func subscribe(t *testing.T, nc *nats.Conn) *subjectLog {
	t.Helper()
	l := &subjectLog{msgs: map[string][]v1.Pod{}, at: map[string]time.Time{}}
	sub, err := nc.Subscribe(wire.StatusSubjectPrefix+".>", func(m *nats.Msg) {
		var p v1.Pod
		if err := json.Unmarshal(m.Data, &p); err != nil {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if _, ok := l.at[m.Subject]; !ok {
			l.at[m.Subject] = time.Now()
		}
		l.msgs[m.Subject] = append(l.msgs[m.Subject], p)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return l
}

func (l *subjectLog) get(subject string) ([]v1.Pod, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]v1.Pod(nil), l.msgs[subject]...), l.at[subject]
}

func TestStatusLandsInBucketAndOnSubject(t *testing.T) {
	ts := startServer(t)
	nc, js := ts.connect()
	kv := createBucket(t, js, wire.StatusBucket)
	log := subscribe(t, nc)
	p := newPublisher(t, StatusConfig{JS: js, NodeName: testNode})

	sent := time.Now()
	p.PodStatusChanged(messages.PodStatusChanged{Pod: statusPod("web", "u1", v1.PodRunning, ""), Static: true})
	p.PodStatusChanged(messages.PodStatusChanged{Pod: statusPod("db", "u2", v1.PodPending, "")})

	subject := wire.StatusSubject(testNode, "default", "web")
	eventually(t, 5*time.Second, "web on its subject", func() bool { m, _ := log.get(subject); return len(m) > 0 })
	_, at := log.get(subject)
	t.Logf("status published %v after the change", at.Sub(sent))

	web := getPod(t, kv, "web")
	if web == nil || web.Status.Phase != v1.PodRunning || web.UID != "u1" || web.Kind != "Pod" {
		t.Fatalf("web in bucket = %+v", web)
	}
	if web.Annotations[StaticAnnotation] != "true" {
		t.Errorf("static pod lacks %s annotation: %v", StaticAnnotation, web.Annotations)
	}
	eventually(t, 5*time.Second, "db in the bucket", func() bool { return getPod(t, kv, "db") != nil })
	if db := getPod(t, kv, "db"); db.Annotations[StaticAnnotation] != "" {
		t.Errorf("non-static pod marked static")
	}
}

// stalledPublisher is a publisher whose writer waits to retry its first
// write, first's status (there is no bucket yet), on the fake clock it
// returns: what the test queues next waits behind it until the clock
// steps. The subject log records what is published.
func stalledPublisher(t *testing.T, first *v1.Pod) (*StatusPublisher, jetstream.JetStream, *subjectLog, *clocktesting.FakeClock) {
	t.Helper()
	ts := startServer(t)
	nc, js := ts.connect()
	log := subscribe(t, nc)
	fc := clocktesting.NewFakeClock(time.Now())
	p := newPublisher(t, StatusConfig{JS: js, NodeName: testNode, Clock: fc})
	p.PodStatusChanged(messages.PodStatusChanged{Pod: first})
	eventually(t, 10*time.Second, "the writer to back off", fc.HasWaiters)
	return p, js, log, fc
}

func TestStatusCoalescesUnderBurst(t *testing.T) {
	p, js, log, fc := stalledPublisher(t, statusPod("web", "u1", v1.PodPending, "v0"))
	for i := 1; i <= 200; i++ {
		p.PodStatusChanged(messages.PodStatusChanged{Pod: statusPod("web", "u1", v1.PodRunning, fmt.Sprintf("v%d", i))})
		p.PodStatusChanged(messages.PodStatusChanged{Pod: statusPod("db", "u2", v1.PodRunning, fmt.Sprintf("v%d", i))})
	}
	if n := p.Pending(); n != 2 {
		t.Fatalf("pending = %d after a burst on two pods, want 2", n)
	}
	kv := createBucket(t, js, wire.StatusBucket)
	fc.Step(time.Second)

	for _, name := range []string{"web", "db"} {
		subject := wire.StatusSubject(testNode, "default", name)
		eventually(t, 5*time.Second, name+" published", func() bool { m, _ := log.get(subject); return len(m) > 0 })
		if got := getPod(t, kv, name); got.Status.Message != "v200" {
			t.Errorf("%s in bucket has %q, want the latest v200", name, got.Status.Message)
		}
	}
	// A sentinel written after the burst proves nothing else is in flight.
	p.PodStatusChanged(messages.PodStatusChanged{Pod: statusPod("sentinel", "u3", v1.PodRunning, "")})
	eventually(t, 5*time.Second, "sentinel", func() bool { return getPod(t, kv, "sentinel") != nil })
	for _, name := range []string{"web", "db"} {
		if m, _ := log.get(wire.StatusSubject(testNode, "default", name)); len(m) != 1 || m[0].Status.Message != "v200" {
			t.Errorf("%s published %d times, want once with v200", name, len(m))
		}
	}
}

func TestStatusRemovalDeletesKey(t *testing.T) {
	_, kv, p := startStatusPublisher(t)

	p.PodStatusChanged(messages.PodStatusChanged{Pod: statusPod("web", "u1", v1.PodRunning, "")})
	eventually(t, 5*time.Second, "web written", func() bool { return getPod(t, kv, "web") != nil })
	p.PodStatusRemoved(statusPod("web", "u1", "", ""))
	eventually(t, 5*time.Second, "web deleted", func() bool { return getPod(t, kv, "web") == nil })

	// A new instance under the same name survives the removal of the old.
	p.PodStatusChanged(messages.PodStatusChanged{Pod: statusPod("static", "old", v1.PodRunning, "")})
	eventually(t, 5*time.Second, "old written", func() bool { p := getPod(t, kv, "static"); return p != nil && p.UID == "old" })
	p.PodStatusChanged(messages.PodStatusChanged{Pod: statusPod("static", "new", v1.PodPending, "")})
	eventually(t, 5*time.Second, "new written", func() bool { p := getPod(t, kv, "static"); return p != nil && p.UID == "new" })
	p.PodStatusRemoved(statusPod("static", "old", "", ""))
	p.PodStatusChanged(messages.PodStatusChanged{Pod: statusPod("sentinel", "s", v1.PodRunning, "")})
	eventually(t, 5*time.Second, "sentinel", func() bool { return getPod(t, kv, "sentinel") != nil })
	if got := getPod(t, kv, "static"); got == nil || got.UID != "new" {
		t.Errorf("removing the old instance touched the new one: %+v", got)
	}
}

// TestFinalStatusWrittenBeforeRemoval: a pod's removal queued while its
// final status waits to be written does not replace it: the status is
// written (bucket and subject), then the key is deleted, as the kubelet
// updates a pod's final status before deleting the pod.
func TestFinalStatusWrittenBeforeRemoval(t *testing.T) {
	p, js, log, fc := stalledPublisher(t, statusPod("blocker", "b", v1.PodRunning, ""))
	p.PodStatusChanged(messages.PodStatusChanged{Pod: statusPod("job", "u1", v1.PodRunning, "running")})
	p.PodStatusChanged(messages.PodStatusChanged{Pod: statusPod("job", "u1", v1.PodSucceeded, "final")})
	p.PodStatusRemoved(statusPod("job", "u1", "", ""))
	kv := createBucket(t, js, wire.StatusBucket)
	fc.Step(time.Second)

	// The subject carries every write; the bucket keeps one value per key,
	// so a watcher of it may see only the deletion.
	subject := wire.StatusSubject(testNode, "default", "job")
	eventually(t, 5*time.Second, "the final status on the subject", func() bool { m, _ := log.get(subject); return len(m) > 0 })
	if m, _ := log.get(subject); len(m) != 1 || m[0].Status.Message != "final" {
		t.Errorf("subject got %d statuses, want the final one once", len(m))
	}
	eventually(t, 5*time.Second, "the key deleted", func() bool { return getPod(t, kv, "job") == nil })
}

func TestStatusSurvivesNATSRestart(t *testing.T) {
	ts := startServer(t)
	nc, js := ts.connect()
	createBucket(t, js, wire.StatusBucket)
	p := newPublisher(t, StatusConfig{JS: js, NodeName: testNode})

	ts.shutdown()
	eventually(t, 5*time.Second, "client to notice", func() bool { return !nc.IsConnected() })
	for i := 1; i <= 20; i++ {
		p.PodStatusChanged(messages.PodStatusChanged{Pod: statusPod("web", "u1", v1.PodRunning, fmt.Sprintf("v%d", i))})
	}
	ts.start()
	eventually(t, 10*time.Second, "reconnect", nc.IsConnected)
	kv, err := js.KeyValue(context.Background(), wire.StatusBucket)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the latest status after the restart", func() bool {
		got := getPod(t, kv, "web")
		return got != nil && got.Status.Message == "v20"
	})
}

func TestNewStatusPublisherErrors(t *testing.T) {
	if _, err := NewStatusPublisher(StatusConfig{NodeName: "n"}); err == nil {
		t.Error("missing JS accepted")
	}
	ts := startServer(t)
	_, js := ts.connect()
	if _, err := NewStatusPublisher(StatusConfig{JS: js}); err == nil {
		t.Error("missing NodeName accepted")
	}
}

// TestStatusFlushWaitsForWrites: once Flush returns, every queued status
// is in the bucket; with the bucket missing, Flush gives up when its
// context ends, naming how many were not written.
func TestStatusFlushWaitsForWrites(t *testing.T) {
	ts := startServer(t)
	_, js := ts.connect()
	p := newPublisher(t, StatusConfig{JS: js, NodeName: testNode})
	p.PodStatusChanged(messages.PodStatusChanged{Pod: statusPod("early", "u0", v1.PodRunning, "")})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	err := p.Flush(ctx)
	cancel()
	if err == nil || !strings.Contains(err.Error(), "not written") {
		t.Fatalf("Flush without the bucket = %v, want an error naming what was not written", err)
	}
	kv := createBucket(t, js, wire.StatusBucket)
	for i := range 20 {
		p.PodStatusChanged(messages.PodStatusChanged{Pod: statusPod(fmt.Sprintf("p%d", i), types.UID(fmt.Sprint(i)), v1.PodFailed, "done")})
	}
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if getPod(t, kv, fmt.Sprintf("p%d", i)) == nil {
			t.Fatalf("p%d not in the bucket after Flush", i)
		}
	}
	if getPod(t, kv, "early") == nil {
		t.Fatal("early not in the bucket after Flush")
	}
}
