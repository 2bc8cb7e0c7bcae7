package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/bus"
	"github.com/actorlet/actorlet/messages/wire"
)

// startNATS runs a JetStream nats-server in this process on a random port:
// the bus every in-process agent of a section joins, and whose varz the
// fleet section reads.
func startNATS(dir string) (*server.Server, error) {
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: filepath.Join(dir, "nats"),
		NoSigs: true, NoLog: true, MaxPayload: 8 << 20,
	})
	if err != nil {
		return nil, fmt.Errorf("create the NATS server: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		return nil, fmt.Errorf("NATS server not ready within 10 s")
	}
	return srv, nil
}

// client is the benchmark's own connection: it writes desired pods and
// watches status, as an operator would.
type client struct {
	conn    *bus.Conn
	desired jetstream.KeyValue
	status  jetstream.KeyValue
}

func dialBus(ctx context.Context, url, creds string) (*client, error) {
	conn, err := bus.Connect(ctx, bus.Options{URL: url, CredsFile: creds, Name: "actorlet-bench"})
	if err != nil {
		return nil, err
	}
	if err := conn.EnsureProtocol(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("create the bus buckets: %w", err)
	}
	return openClient(ctx, conn)
}

// openClient opens the desired and status buckets on conn; conn is closed
// if they cannot be.
func openClient(ctx context.Context, conn *bus.Conn) (*client, error) {
	c := &client{conn: conn}
	var err error
	if c.desired, err = conn.JS.KeyValue(ctx, wire.DesiredBucket); err == nil {
		c.status, err = conn.JS.KeyValue(ctx, wire.StatusBucket)
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("open the KV buckets: %w", err)
	}
	return c, nil
}

func (c *client) close() { c.conn.Close() }

// put writes every value at once, from a pool of writers, and returns when
// all writes are acknowledged.
func (c *client) put(ctx context.Context, values map[string][]byte) error {
	return parallel(ctx, 32, keysOf(values), func(ctx context.Context, k string) error {
		if _, err := c.desired.Put(ctx, k, values[k]); err != nil {
			return fmt.Errorf("put desired %s: %w", k, err)
		}
		return nil
	})
}

// purge deletes desired keys at once (an immediate REMOVE on the node).
func (c *client) purge(ctx context.Context, keys []string) error {
	return parallel(ctx, 32, keys, func(ctx context.Context, k string) error {
		if err := c.desired.Purge(ctx, k); err != nil {
			return fmt.Errorf("purge desired %s: %w", k, err)
		}
		return nil
	})
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// parallel runs f for every item with at most n at a time; the first error wins.
func parallel[T any](ctx context.Context, n int, items []T, f func(context.Context, T) error) error {
	ch := make(chan T)
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range ch {
				if err := f(ctx, it); err != nil {
					once.Do(func() { first = err })
				}
			}
		}()
	}
	for _, it := range items {
		ch <- it
	}
	close(ch)
	wg.Wait()
	return first
}

// podState is what the watcher keeps of each status entry.
type podState struct {
	running      time.Time // first seen Running with every container running
	died         time.Time // first seen with a container terminated or restarted
	restarted    time.Time // first seen running again with restartCount ≥ 1
	finishedAt   time.Time // the dead container's finishedAt, as reported
	removed      time.Time // status entry deleted
	restartCount int32
}

// statusWatch follows actorlet_status for keys under a filter and records
// when each pod first reached each state, as seen by an operator.
type statusWatch struct {
	mu     sync.Mutex
	pods   map[string]*podState
	cancel context.CancelFunc
	done   chan struct{}
}

func (c *client) watchStatus(ctx context.Context, filter string) (*statusWatch, error) {
	ctx, cancel := context.WithCancel(ctx)
	w, err := c.status.Watch(ctx, filter)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watch status %s: %w", filter, err)
	}
	sw := &statusWatch{pods: map[string]*podState{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(sw.done)
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e != nil {
					sw.observe(e, time.Now())
				}
			}
		}
	}()
	return sw, nil
}

func (sw *statusWatch) stop() { sw.cancel(); <-sw.done }

func (sw *statusWatch) observe(e jetstream.KeyValueEntry, now time.Time) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	p := sw.pods[e.Key()]
	if p == nil {
		p = &podState{}
		sw.pods[e.Key()] = p
	}
	if e.Operation() != jetstream.KeyValuePut {
		if p.removed.IsZero() {
			p.removed = now
		}
		return
	}
	var pod v1.Pod
	if err := json.Unmarshal(e.Value(), &pod); err != nil {
		return
	}
	allRunning := len(pod.Status.ContainerStatuses) > 0
	for _, cs := range pod.Status.ContainerStatuses {
		allRunning = allRunning && cs.State.Running != nil
		if (cs.State.Terminated != nil || cs.RestartCount > 0) && p.died.IsZero() {
			p.died = now
			if t := cs.State.Terminated; t != nil {
				p.finishedAt = t.FinishedAt.Time
			} else if t := cs.LastTerminationState.Terminated; t != nil {
				p.finishedAt = t.FinishedAt.Time
			}
		}
		if cs.RestartCount > 0 && cs.State.Running != nil && p.restarted.IsZero() {
			p.restarted, p.restartCount = now, cs.RestartCount
		}
	}
	if pod.Status.Phase == v1.PodRunning && allRunning && p.running.IsZero() {
		p.running = now
	}
}

// count is how many watched pods satisfy f.
func (sw *statusWatch) count(f func(*podState) bool) int {
	return sw.countKeys("", f)
}

// countKeys is how many watched pods whose status key starts with prefix
// satisfy f (the fleet's nodes share a prefix; stale entries of other
// sections' nodes must not count).
func (sw *statusWatch) countKeys(prefix string, f func(*podState) bool) int {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	n := 0
	for k, p := range sw.pods {
		if strings.HasPrefix(k, prefix) && f(p) {
			n++
		}
	}
	return n
}

// snapshot copies the states, keyed by status key.
func (sw *statusWatch) snapshot() map[string]podState {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	out := make(map[string]podState, len(sw.pods))
	for k, p := range sw.pods {
		out[k] = *p
	}
	return out
}

// waitFor polls until f holds or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, what string, f func() bool) error {
	deadline := time.Now().Add(timeout)
	for !f() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(100 * time.Millisecond): // figures come from per-pod timestamps; this only decides when to stop
		}
	}
	return nil
}

func isRunning(p *podState) bool { return !p.running.IsZero() }

// statusFilter is the status key filter of a namespace on a node ("*" for every node).
func statusFilter(node, namespace string) string {
	if node != "*" {
		node = wire.EncodeName(node)
	}
	return strings.Join([]string{node, wire.EncodeName(namespace), ">"}, ".")
}
