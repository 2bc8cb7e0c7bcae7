package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/actorlet/actorlet/messages/wire"
)

// kvOperation is JetStream KV's operation header.
const kvOperation = "KV-Operation"

// Entry is a bucket entry read through a consumer; it implements
// jetstream.KeyValueEntry.
type Entry struct {
	bucket, key string
	value       []byte
	revision    uint64
	created     time.Time
	delta       uint64
	op          jetstream.KeyValueOp
}

func (e *Entry) Bucket() string                  { return e.bucket }
func (e *Entry) Key() string                     { return e.key }
func (e *Entry) Value() []byte                   { return e.value }
func (e *Entry) Revision() uint64                { return e.revision }
func (e *Entry) Created() time.Time              { return e.created }
func (e *Entry) Delta() uint64                   { return e.delta }
func (e *Entry) Operation() jetstream.KeyValueOp { return e.op }

func entryOf(bucket string, m jetstream.Msg) (*Entry, error) {
	meta, err := m.Metadata()
	if err != nil {
		return nil, fmt.Errorf("message of %s without metadata: %w", bucket, err)
	}
	e := &Entry{
		bucket:   bucket,
		key:      strings.TrimPrefix(m.Subject(), "$KV."+bucket+"."),
		value:    m.Data(),
		revision: meta.Sequence.Stream,
		created:  meta.Timestamp,
		delta:    meta.NumPending,
	}
	switch m.Headers().Get(kvOperation) {
	case "DEL":
		e.op = jetstream.KeyValueDelete
	case "PURGE":
		e.op = jetstream.KeyValuePurge
	}
	return e, nil
}

// ConsumerWatch reads a bucket through a node's consumer from the start:
// every stored entry (older revisions too, in order), then nil once the
// stored entries are all delivered, then changes as they happen, like a
// KV watcher.
type ConsumerWatch struct {
	it       jetstream.MessagesContext
	updates  chan jetstream.KeyValueEntry
	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
	err      error
}

// WatchConsumer resets consumer (on bucket's stream) to the first sequence
// and starts reading it.
func WatchConsumer(ctx context.Context, js jetstream.JetStream, bucket, consumer string) (*ConsumerWatch, error) {
	stream := wire.BucketStream(bucket)
	cons, err := js.Consumer(ctx, stream, consumer)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("consumer %s of bucket %s: %w", consumer, bucket, wire.ErrNotProvisioned)
	}
	if err != nil {
		return nil, fmt.Errorf("look up consumer %s of bucket %s: %w", consumer, bucket, err)
	}
	// The pending count in the reset's answer tells when the stored entries
	// end. nats-server acknowledges a write before it signals the write to
	// the consumers (which count it then), and a reset to the sequence a
	// consumer is already at (one never read is at 1) keeps that running
	// count: a listing right after a write could see none of it. A reset
	// from elsewhere recounts from the store, so move it to 2 first.
	if _, err := js.ResetConsumerToSequence(ctx, stream, consumer, 2); err != nil {
		return nil, fmt.Errorf("reset consumer %s of bucket %s: %w", consumer, bucket, err)
	}
	r, err := js.ResetConsumerToSequence(ctx, stream, consumer, 1)
	if err != nil {
		return nil, fmt.Errorf("reset consumer %s of bucket %s: %w", consumer, bucket, err)
	}
	pending := uint64(0)
	if r.ConsumerInfo != nil {
		pending = r.ConsumerInfo.NumPending
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(256))
	if err != nil {
		return nil, fmt.Errorf("read consumer %s of bucket %s: %w", consumer, bucket, err)
	}
	w := &ConsumerWatch{it: it, updates: make(chan jetstream.KeyValueEntry, 256), stop: make(chan struct{}), done: make(chan struct{})}
	go w.run(bucket, pending == 0)
	return w, nil
}

func (w *ConsumerWatch) run(bucket string, initDone bool) {
	defer close(w.done)
	defer close(w.updates)
	send := func(e jetstream.KeyValueEntry) bool {
		select {
		case w.updates <- e:
			return true
		case <-w.stop:
			return false
		}
	}
	if initDone && !send(nil) {
		return
	}
	for {
		m, err := w.it.Next()
		if err != nil {
			w.err = err
			return
		}
		e, err := entryOf(bucket, m)
		if err != nil {
			continue
		}
		if !send(e) {
			return
		}
		if !initDone && e.delta == 0 {
			initDone = true
			if !send(nil) {
				return
			}
		}
	}
}

// Updates delivers entries, nil after the stored ones; it is closed when
// the watch ends.
func (w *ConsumerWatch) Updates() <-chan jetstream.KeyValueEntry { return w.updates }

// Stop ends the watch and waits for its reader.
func (w *ConsumerWatch) Stop() {
	w.stopOnce.Do(func() {
		close(w.stop)
		w.it.Stop()
		<-w.done
	})
}

// consumerLocks serializes the readers of one consumer in this process: a
// pull consumer hands each message to one waiting request, and a reset
// restarts everyone, so two concurrent listings would each miss entries.
var consumerLocks sync.Map // stream/consumer → *sync.Mutex

// ConsumerKeys lists the keys whose latest entry is not a deletion, read
// through consumer from the start. Listings of the same consumer in this
// process run one at a time.
func ConsumerKeys(ctx context.Context, js jetstream.JetStream, bucket, consumer string) ([]string, error) {
	l, _ := consumerLocks.LoadOrStore(wire.BucketStream(bucket)+"/"+consumer, &sync.Mutex{})
	mu := l.(*sync.Mutex)
	mu.Lock()
	defer mu.Unlock()
	w, err := WatchConsumer(ctx, js, bucket, consumer)
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	live := map[string]bool{}
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return nil, fmt.Errorf("reading keys of %s ended early: %w", bucket, w.err)
			}
			if e == nil {
				keys := make([]string, 0, len(live))
				for k := range live {
					keys = append(keys, k)
				}
				return keys, nil
			}
			live[e.Key()] = e.Operation() == jetstream.KeyValuePut
			if !live[e.Key()] {
				delete(live, e.Key())
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
