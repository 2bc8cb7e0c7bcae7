package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/test/testutil"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/bus"
	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/node/publish"
)

const waitFor = 10 * time.Second

// collector records what a source sends, plus its invalid-entry reports.
type collector struct {
	mu      sync.Mutex
	updates []messages.PodUpdate
	invalid map[string]error
	events  []string
}

func (c *collector) out(u messages.PodUpdate) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updates = append(c.updates, u)
}

func (c *collector) onInvalid(key string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.invalid[key] = err
}

func (c *collector) Eventf(pod *v1.Pod, eventType, reason, format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, fmt.Sprintf("%s %s %s/%s: %s", eventType, reason, pod.Namespace, pod.Name, fmt.Sprintf(format, args...)))
}

func (c *collector) snapshot() []messages.PodUpdate {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]messages.PodUpdate(nil), c.updates...)
}

func (c *collector) invalidErr(key string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.invalid[key]
}

// waitUpdates waits until exactly n updates arrived and returns them.
func (c *collector) waitUpdates(t *testing.T, n int) []messages.PodUpdate {
	t.Helper()
	var got []messages.PodUpdate
	testutil.Eventually(t, waitFor, func() error {
		got = c.snapshot()
		if len(got) < n {
			return fmt.Errorf("have %d updates %v, want %d", len(got), got, n)
		}
		return nil
	})
	if len(got) != n {
		t.Fatalf("got %d updates %v, want %d", len(got), got, n)
	}
	return got
}

type env struct {
	srv  *bustest.Server
	conn *bus.Conn
	ctx  context.Context
}

// newEnv runs a server secured as docs/security.md says: the test writes
// as an operator (conn), every source runs with its node's credentials.
func newEnv(t *testing.T) *env {
	srv := bustest.StartServer(t, bustest.ServerOptions{Secure: true})
	return &env{srv: srv, conn: bustest.ConnectWithProtocol(t, srv), ctx: testContext(t)}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (e *env) start(t *testing.T, node string, labels map[string]string) (*Source, *collector) {
	t.Helper()
	return e.startWith(t, node, func(c *Config) { c.NodeLabels = labels })
}

// startWithPod starts n1's source, waits for its first (empty) set, then
// writes pod default/name (image a:1) and waits for its update.
func (e *env) startWithPod(t *testing.T, name string) (*Source, *collector) {
	t.Helper()
	s, c := e.start(t, "n1", nil)
	c.waitUpdates(t, 1)
	e.putPod(t, "n1", name, "a:1")
	c.waitUpdates(t, 2)
	return s, c
}

// startWith starts node's source with a Config that set changes.
func (e *env) startWith(t *testing.T, node string, set func(*Config)) (*Source, *collector) {
	t.Helper()
	c := &collector{invalid: map[string]error{}}
	nodeConn := bustest.ConnectNode(t, e.srv, node) // the source and its statuses run with node credentials
	statuses, err := publish.NewStatusPublisher(publish.StatusConfig{JS: nodeConn.JS, NodeName: node})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(statuses.Stop)
	cfg := Config{Bus: nodeConn, NodeName: node, Out: c.out, Statuses: statuses, Recorder: c, OnInvalid: c.onInvalid}
	set(&cfg)
	s, err := Start(e.ctx, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(s.Stop)
	return s, c
}

func (e *env) put(t *testing.T, key string, value []byte) {
	t.Helper()
	kv, err := e.conn.JS.KeyValue(e.ctx, wire.DesiredBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(e.ctx, key, value); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

func (e *env) del(t *testing.T, key string) {
	t.Helper()
	kv, err := e.conn.JS.KeyValue(e.ctx, wire.DesiredBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(e.ctx, key); err != nil {
		t.Fatalf("delete %s: %v", key, err)
	}
}

// status reads a pod's status entry; nil when there is none.
func (e *env) status(t *testing.T, node, namespace, name string) *v1.Pod {
	t.Helper()
	kv, err := e.conn.JS.KeyValue(e.ctx, wire.StatusBucket)
	if err != nil {
		t.Fatal(err)
	}
	entry, err := kv.Get(e.ctx, wire.StatusKey(node, namespace, name))
	if err != nil {
		return nil
	}
	pod := &v1.Pod{}
	if err := json.Unmarshal(entry.Value(), pod); err != nil {
		t.Fatalf("status entry: %v", err)
	}
	return pod
}

type podOpt func(*v1.Pod)

// putPod writes pod default/name running image (podJSON) as node's desired
// pod.
func (e *env) putPod(t *testing.T, node, name, image string, opts ...podOpt) {
	t.Helper()
	e.put(t, wire.DesiredNodeKey(node, "default", name), podJSON(t, "default", name, image, opts...))
}

func podJSON(t *testing.T, namespace, name, image string, opts ...podOpt) []byte {
	t.Helper()
	pod := &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "main", Image: image}}},
	}
	for _, o := range opts {
		o(pod)
	}
	data, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func withSelector(sel map[string]string) podOpt {
	return func(p *v1.Pod) { p.Spec.NodeSelector = sel }
}

func deleting(grace *int64) podOpt {
	return func(p *v1.Pod) {
		now := metav1.NewTime(time.Unix(1700000000, 0))
		p.DeletionTimestamp = &now
		p.DeletionGracePeriodSeconds = grace
	}
}

func names(pods []*v1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out
}

func ptr[T any](v T) *T { return &v }
