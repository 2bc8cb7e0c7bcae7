package remote

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/bus"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/messages/wire/busauth"
)

// A failed or lost watch is watched again after a bus.Backoff.
const (
	// initialTimeout bounds the read of the stored entries: the consumer
	// read itself ends (with an error) after a few seconds without word
	// from the server (bus.ConsumerWatch), so this only stops a read that
	// keeps receiving without ever reaching the end.
	initialTimeout = 30 * time.Second
)

var (
	errWatchClosed = errors.New("desired pods watcher closed")
	errResync      = errors.New("reconnected to NATS, re-watching desired pods")
)

// Source delivers the desired pods of one node from the bus.
type Source struct {
	cfg Config
	kv  jetstream.KeyValue // wire.DesiredBucket

	cancel     context.CancelFunc
	done       chan struct{}
	resync     chan struct{}
	unregister func()
	stopOnce   sync.Once

	// Owned by the run goroutine.
	delivered map[string]*v1.Pod // key → pod last delivered
	revs      map[string]uint64  // key → last revision applied (tombstones too)
	rejected  map[string]bool    // keys whose latest value was rejected
	// nodeNames maps namespace/name to the node key delivering it;
	// shadowed holds the fleet pods not run because a node pod has their
	// name (see shadow.go).
	nodeNames map[string]string
	shadowed  map[string]*v1.Pod
	sentSet   bool
	pruned    bool                 // the prune after the first SET was complete (prune.go)
	watches   int                  // watches whose stored entries were applied
	removals  map[RemovalCause]int // removals of the current watch's re-read, for its log line
	// unconfirmed are keys a stale re-watch snapshot lacked, with the
	// revision the watch must reach before they count as gone (stale.go).
	unconfirmed map[string]uint64

	// Fleet placement (placement.go).
	node       nodeState
	entries    map[string]jetstream.KeyValueEntry // fleet key → latest entry
	waiting    map[string]jetstream.KeyValueEntry // fleet keys that do not fit this node (yet)
	evictAt    map[string]time.Time               // fleet keys to evict for a NoExecute taint
	evictTimer func()                             // stops the pending eviction wake-up
}

// Start opens the buckets and starts watching. The first update is a SET
// of every desired pod of this node (possibly none). The source runs until
// Stop is called or ctx is canceled.
func Start(ctx context.Context, cfg Config) (*Source, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	kv, err := cfg.Bus.JetStream().KeyValue(ctx, wire.DesiredBucket)
	if err != nil {
		return nil, fmt.Errorf("open bucket %q (has EnsureProtocol run?): %w", wire.DesiredBucket, err)
	}
	if err := busauth.EnsureNodeConsumers(ctx, cfg.Bus.JetStream(), cfg.NodeName); err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	s := newSource(cfg, kv, cancel)
	s.unregister = cfg.Bus.OnReconnect(func() {
		select {
		case s.resync <- struct{}{}:
		default:
		}
	})
	go s.run(runCtx)
	return s, nil
}

// newSource is a Source that does not run yet.
func newSource(cfg Config, kv jetstream.KeyValue, cancel context.CancelFunc) *Source {
	s := &Source{
		cfg:       cfg,
		kv:        kv,
		cancel:    cancel,
		done:      make(chan struct{}),
		resync:    make(chan struct{}, 1),
		delivered: map[string]*v1.Pod{},
		revs:      map[string]uint64{},
		rejected:  map[string]bool{},
		nodeNames: map[string]string{},
		shadowed:  map[string]*v1.Pod{},
		entries:   map[string]jetstream.KeyValueEntry{},
		waiting:   map[string]jetstream.KeyValueEntry{},
		evictAt:   map[string]time.Time{},
		removals:  map[RemovalCause]int{},
	}
	s.node.view = newNodeView(cfg.NodeName, cfg.NodeLabels, cfg.NodeTaints)
	s.node.changed = make(chan struct{}, 1)
	return s
}

// Stop ends the watch and waits for it; Out is not called afterwards.
func (s *Source) Stop() {
	s.stopOnce.Do(func() {
		s.unregister()
		s.cancel()
		<-s.done
	})
}

func (s *Source) run(ctx context.Context) {
	defer close(s.done)
	defer func() {
		if s.evictTimer != nil {
			s.evictTimer()
		}
	}()
	var backoff bus.Backoff
	for {
		synced, err := s.watch(ctx)
		if ctx.Err() != nil {
			return
		}
		if synced {
			backoff.Reset()
		}
		if errors.Is(err, errResync) {
			klog.InfoS("Re-watching desired pods after reconnect", "node", s.cfg.NodeName)
			continue
		}
		wait := backoff.Next()
		klog.ErrorS(err, "Watching desired pods failed, retrying", "node", s.cfg.NodeName, "backoff", wait)
		select {
		case <-ctx.Done():
			return
		case <-s.cfg.Clock.After(wait):
		case <-s.resync:
		}
	}
}

// watch runs one watcher: initial values, then changes, until the watcher
// ends, a reconnect asks for a fresh one, or ctx ends. synced says whether
// the initial values were applied.
func (s *Source) watch(ctx context.Context) (synced bool, err error) {
	select { // a fresh watcher makes a pending resync moot
	case <-s.resync:
	default:
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The node's own durable consumer (filters node.<node>.> and fleet.>),
	// reset to the start: nodes may not create consumers (docs/security.md).
	consumer := wire.NodeDesiredConsumer(s.cfg.NodeName)
	w, err := bus.WatchConsumer(wctx, s.cfg.Bus.JetStream(), wire.DesiredBucket, consumer)
	if err != nil {
		return false, fmt.Errorf("watch %s through consumer %s: %w", wire.DesiredBucket, consumer, err)
	}
	defer w.Stop()

	initial := map[string]jetstream.KeyValueEntry{}
	var read readStats
	timeout := s.cfg.Clock.After(initialTimeout)
	for initDone := false; !initDone; {
		select {
		case <-timeout:
			return false, fmt.Errorf("stored entries of %s not all read within %s (read %d entries, revisions %d–%d)",
				wire.DesiredBucket, initialTimeout, read.entries, read.first, read.last)
		case e, ok := <-w.Updates():
			if !ok {
				return false, fmt.Errorf("%w: %w", errWatchClosed, w.Err())
			}
			if e == nil {
				initDone = true
				break
			}
			read.add(e)
			initial[e.Key()] = e
		case <-s.resync:
			return false, errResync
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	s.removals = map[RemovalCause]int{}
	s.applyInitial(ctx, initial)
	klog.InfoS("Read the desired pods", "node", s.cfg.NodeName, "rewatch", s.watches > 0,
		"entries", read.entries, "keys", len(initial), "firstRevision", read.first, "lastRevision", read.last,
		"delivered", len(s.delivered), "removed", s.removals, "unconfirmed", len(s.unconfirmed))
	s.watches++

	s.reevaluate(ctx) // taints may evict, and labels may have changed meanwhile
	for {
		select {
		case <-s.node.changed:
			s.reevaluate(ctx)
		case e, ok := <-w.Updates():
			if !ok {
				return true, fmt.Errorf("%w: %w", errWatchClosed, w.Err())
			}
			if e != nil {
				s.apply(ctx, e)
			}
		case <-s.resync:
			return true, errResync
		case <-ctx.Done():
			return true, ctx.Err()
		}
	}
}

// applyInitial applies a watcher's initial values. The first time they
// become one SET; after a re-watch they are diffed against what was
// delivered, and pods whose keys are gone are removed.
func (s *Source) applyInitial(ctx context.Context, initial map[string]jetstream.KeyValueEntry) {
	keys := make([]string, 0, len(initial))
	for k := range initial {
		keys = append(keys, k)
	}
	sort.Strings(keys)

	first := !s.sentSet
	for _, k := range keys {
		for _, u := range s.step(ctx, initial[k]) {
			if !first {
				s.emit(k, u)
			}
		}
	}
	held := make([]string, 0, len(s.delivered)+len(s.shadowed))
	for k := range s.shadowed {
		held = append(held, k)
	}
	for k := range s.delivered {
		held = append(held, k)
	}
	gone, unsure := s.goneIn(initial, held)
	s.removeGone(gone, func(k string) RemovalCause {
		if e, ok := initial[k]; ok && e.Operation() == jetstream.KeyValuePurge {
			return CausePurge
		} else if ok {
			return CauseTombstone
		}
		return CauseAbsent
	})
	s.unconfirmed = unsure
	if len(unsure) > 0 {
		klog.InfoS("Re-watch read a stale copy of the desired bucket; keys it lacks keep their pods until the watch catches up",
			"node", s.cfg.NodeName, "keys", len(unsure))
	}
	if !first {
		return
	}
	s.sentSet = true
	pods := make([]*v1.Pod, 0, len(s.delivered))
	for _, k := range keys {
		if pod, ok := s.delivered[k]; ok {
			pods = append(pods, pod.DeepCopy())
		}
	}
	s.cfg.Out(messages.PodUpdate{Op: messages.OpSet, Pods: pods, Source: messages.SourceRemote})
	s.pruneStatuses(ctx)
}

// apply handles one change after the initial values.
func (s *Source) apply(ctx context.Context, e jetstream.KeyValueEntry) {
	added := false
	for _, u := range s.step(ctx, e) {
		s.emit(e.Key(), u)
		added = added || u.op == messages.OpAdd
	}
	s.confirm(e)
	if added && isFleetKey(e.Key()) && len(s.currentNode().node.Spec.Taints) > 0 {
		s.reevaluate(ctx) // a tolerated NoExecute taint may bound its stay
	}
}

func (s *Source) send(op messages.Op, pod *v1.Pod) {
	klog.V(2).InfoS("Desired pod changed", "op", op, "pod", klog.KObj(pod), "podUID", pod.UID)
	s.cfg.Out(messages.PodUpdate{Op: op, Pods: []*v1.Pod{pod.DeepCopy()}, Source: messages.SourceRemote})
}

// readStats describes the stored entries a watch read, for its log line.
type readStats struct {
	entries     int
	first, last uint64 // revisions
}

func (r *readStats) add(e jetstream.KeyValueEntry) {
	if r.entries == 0 {
		r.first = e.Revision()
	}
	r.entries++
	r.last = e.Revision()
}

func isDeletion(e jetstream.KeyValueEntry) bool {
	return e.Operation() == jetstream.KeyValueDelete || e.Operation() == jetstream.KeyValuePurge
}
