// Package publish puts what the node knows on the bus: pod statuses
// (StatusPublisher, the status actor's sink and the one owner of the node's
// status entries: writes, prunes of stale entries, finalization of deleted
// pods) and the node's registration and heartbeat (Heartbeat); readers judge
// freshness with wire.NodeReady.
package publish

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/actorlet/actorlet/actors/status"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/wire"
)

// StaticAnnotation marks the published status of a static (file) pod, as a
// mirror pod is marked in Kubernetes.
const StaticAnnotation = wire.StaticAnnotation

const (
	// failureLogEvery: a write that keeps failing is logged at error level
	// every failureLogEvery-th failure (a short NATS outage stays at -v=2).
	failureLogEvery = 20
	writeTimeout    = 2 * time.Second
	minRetry        = 100 * time.Millisecond
	maxRetry        = 5 * time.Second
)

// The status actor publishes through a StatusPublisher.
var _ status.Sink = &StatusPublisher{}

// StatusConfig configures a StatusPublisher.
type StatusConfig struct {
	JS       jetstream.JetStream
	NodeName string
	// Clock paces retries (default real time).
	Clock clock.Clock
}

// StatusPublisher owns this node's pod status entries (see entries.go): it
// writes pod statuses to the status bucket and subject. Its sink methods
// never block: changes are queued per pod, the latest
// wins, and one goroutine writes them, retrying while NATS is unreachable.
type StatusPublisher struct {
	js    jetstream.JetStream
	node  string
	clock clock.Clock

	mu      sync.Mutex
	pending map[string]*statusWrite // by status key
	order   []string                // keys in arrival order
	wake    chan struct{}
	writing bool // the writer holds a change taken from pending

	kv jetstream.KeyValue // only used by the writer goroutine
	// syncKV is the bucket handle of the synchronous calls (WriteNow,
	// DeleteIf, PruneStale), opened once: opening asks the stream leader
	// for the stream's info, which a fleet-wide apply would otherwise do
	// once per new pod on every node.
	syncMu sync.Mutex
	syncKV jetstream.KeyValue
	// published is the UID last written under each key (writer only), so
	// removing an old pod instance never deletes its successor's status.
	published map[string]types.UID

	finalizeMu sync.Mutex
	finalize   func(context.Context, *v1.Pod) error // see FinalizeWith

	cancel context.CancelFunc
	done   chan struct{}
	stop   sync.Once
}

// statusWrite is one coalesced change of a key.
type statusWrite struct {
	key, subject string
	uid          types.UID
	data         []byte // Pod JSON; nil for a removal
	// thenRemove: the pod's removal came while this status was queued.
	// The status is written first, as the kubelet updates a pod's final
	// status before deleting it: a watcher sees how the pod ended.
	thenRemove bool
	attempts   int // failed writes so far
}

// NewStatusPublisher starts a publisher; Stop it when done.
func NewStatusPublisher(cfg StatusConfig) (*StatusPublisher, error) {
	if cfg.JS == nil {
		return nil, errors.New("status publisher: JS is required")
	}
	if cfg.NodeName == "" {
		return nil, errors.New("status publisher: NodeName is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &StatusPublisher{
		js: cfg.JS, node: cfg.NodeName, clock: cfg.Clock,
		pending: map[string]*statusWrite{}, wake: make(chan struct{}, 1),
		published: map[string]types.UID{},
		cancel:    cancel, done: make(chan struct{}),
	}
	go p.run(ctx)
	return p, nil
}

// PodStatusChanged queues the pod's status (in m.Pod.Status) for publishing.
func (p *StatusPublisher) PodStatusChanged(m messages.PodStatusChanged) {
	if m.Pod == nil {
		return
	}
	pod := m.Pod.DeepCopy()
	pod.APIVersion, pod.Kind = "v1", "Pod"
	if m.Static || pod.Annotations[messages.ConfigSourceAnnotation] == messages.SourceFile {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[StaticAnnotation] = "true"
	}
	data, err := FitStatus(pod, p.maxPayload())
	if err != nil {
		klog.ErrorS(err, "Cannot encode pod status", "pod", klog.KObj(pod))
		return
	}
	p.enqueue(&statusWrite{
		key: wire.StatusKey(p.node, pod.Namespace, pod.Name), subject: wire.StatusSubject(p.node, pod.Namespace, pod.Name),
		uid: pod.UID, data: data,
	})
	p.maybeFinalize(m.Pod)
}

// PodStatusRemoved queues the deletion of the pod's status.
func (p *StatusPublisher) PodStatusRemoved(pod *v1.Pod) {
	if pod == nil {
		return
	}
	p.enqueue(&statusWrite{key: wire.StatusKey(p.node, pod.Namespace, pod.Name), uid: pod.UID})
}

func (p *StatusPublisher) enqueue(w *statusWrite) {
	p.mu.Lock()
	prev, ok := p.pending[w.key]
	switch {
	case !ok:
		p.order = append(p.order, w.key)
		p.pending[w.key] = w
	case w.data == nil && prev.data != nil && prev.uid != w.uid:
		// An older instance is removed while its successor's status is
		// queued: the successor's write wins.
	case w.data == nil && prev.data != nil:
		prev.thenRemove = true
	default:
		p.pending[w.key] = w
	}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Stop ends the writer; queued changes not yet written are dropped.
func (p *StatusPublisher) Stop() {
	p.stop.Do(func() {
		p.cancel()
		<-p.done
	})
}

// flushPoll is how often Flush looks at the queue.
const flushPoll = 10 * time.Millisecond

// Flush waits until every change queued so far is written (or dropped as
// unwritable), or ctx ends: the agent calls it before it exits after a
// node shutdown, so the pods' final statuses are on the bus.
func (p *StatusPublisher) Flush(ctx context.Context) error {
	for {
		p.mu.Lock()
		idle := len(p.order) == 0 && !p.writing
		left := len(p.order)
		p.mu.Unlock()
		if idle {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("flush pod statuses: %d not written: %w", left, ctx.Err())
		case <-p.done:
			return fmt.Errorf("flush pod statuses: publisher stopped with %d not written", left)
		case <-p.clock.After(flushPoll):
		}
	}
}

// Pending is how many pods have a change waiting to be written.
func (p *StatusPublisher) Pending() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pending)
}

func (p *StatusPublisher) run(ctx context.Context) {
	defer close(p.done)
	backoff := minRetry
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		}
		for {
			w := p.next()
			if w == nil {
				break
			}
			if err := p.write(ctx, w); err != nil {
				if ctx.Err() != nil {
					return
				}
				if permanent(err) {
					// Retrying cannot help; the pod's next change is
					// written afresh. Never let it hold up the others.
					klog.ErrorS(err, "Cannot publish pod status, dropping this change", "key", w.key, "bytes", len(w.data))
					continue
				}
				w.attempts++
				if w.attempts%failureLogEvery == 0 {
					klog.ErrorS(err, "Cannot publish pod status, will retry", "key", w.key, "attempts", w.attempts, "retryIn", backoff)
				} else {
					klog.V(2).InfoS("Cannot publish pod status, will retry", "key", w.key, "err", err, "attempts", w.attempts, "retryIn", backoff)
				}
				p.requeue(w)
				select {
				case <-ctx.Done():
					return
				case <-p.clock.After(backoff):
				}
				backoff = min(2*backoff, maxRetry)
				continue
			}
			backoff = minRetry
		}
	}
}

// next takes the oldest queued change (the one taken before is done).
func (p *StatusPublisher) next() *statusWrite {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.writing = false
	if len(p.order) == 0 {
		return nil
	}
	p.writing = true
	key := p.order[0]
	p.order = p.order[1:]
	w := p.pending[key]
	delete(p.pending, key)
	return w
}

// requeue puts a failed change back at the end of the queue, unless a newer
// one for the same key arrived meanwhile: the other pods' changes are
// written first, so one pod whose write keeps failing never holds up the
// rest (while NATS is unreachable every write fails and the back-off paces
// them all).
func (p *StatusPublisher) requeue(w *statusWrite) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, newer := p.pending[w.key]; newer {
		return
	}
	p.pending[w.key] = w
	p.order = append(p.order, w.key)
}

// permanent tells a write error that retrying cannot fix.
func permanent(err error) bool {
	return errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, nats.ErrBadSubject) ||
		errors.Is(err, jetstream.ErrInvalidKey)
}

// maxPayload is the largest status the bus accepts now.
func (p *StatusPublisher) maxPayload() int {
	if nc := p.js.Conn(); nc != nil {
		if mp := nc.MaxPayload(); mp > 0 {
			return int(mp)
		}
	}
	return DefaultMaxPayload
}

func (p *StatusPublisher) write(ctx context.Context, w *statusWrite) error {
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	if p.kv == nil {
		kv, err := p.js.KeyValue(ctx, wire.StatusBucket)
		if err != nil {
			return fmt.Errorf("open bucket %s: %w", wire.StatusBucket, err)
		}
		p.kv = kv
	}
	if w.data != nil {
		if err := p.put(ctx, w); err != nil {
			return err
		}
		if !w.thenRemove {
			return nil
		}
		// Written: what is left (and retried on failure) is the removal.
		w.data, w.thenRemove, w.attempts = nil, false, 0
	}
	if uid, ok := p.published[w.key]; ok && uid != w.uid {
		return nil // a newer instance owns the key now
	}
	if err := p.kv.Delete(ctx, w.key); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("delete status %s: %w", w.key, err)
	}
	delete(p.published, w.key)
	return nil
}

// put writes w's status to the bucket and its subject.
func (p *StatusPublisher) put(ctx context.Context, w *statusWrite) error {
	if _, err := p.kv.Put(ctx, w.key, w.data); err != nil {
		return fmt.Errorf("put status %s: %w", w.key, err)
	}
	p.published[w.key] = w.uid
	if err := p.js.Conn().PublishMsg(&nats.Msg{Subject: w.subject, Data: w.data}); err != nil {
		// The KV holds the status; watchers of the subject miss one
		// change, which the next one supersedes.
		klog.V(2).InfoS("Cannot publish pod status on subject", "subject", w.subject, "err", err)
	}
	return nil
}
