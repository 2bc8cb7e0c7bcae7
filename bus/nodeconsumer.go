package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
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

// Pull requests of a consumer read. A read has one request waiting on the
// server at a time (two only for a while after a silence, when it asks
// again while the lost one may still wait), and every request expires, so
// a read that stops leaves nothing behind for long: while the stored entries are
// read, requests live storedExpires and the server sends an idle
// heartbeat after storedHeartbeat without a message; afterwards they live
// pullExpires with a heartbeat every pullHeartbeat. (nats-server wants a
// heartbeat of at most half the expiry.)
const (
	pullBatch       = 256
	storedExpires   = 250 * time.Millisecond
	storedHeartbeat = 100 * time.Millisecond
	pullExpires     = 5 * time.Second
	pullHeartbeat   = 2 * time.Second
	// maxSilences is how many silences in a row (see pullSilence) a read
	// asks again through before it ends. Ending costs more than asking:
	// the caller reads again from the start, a lookup and two resets of
	// the consumer (replicated on a cluster) and the whole stream. When a
	// loaded server keeps nobody's heartbeat's pace, every node's read
	// falls silent together, and with one renewal only, their re-reads
	// (thousands of API requests at once in a 500-node fleet) kept the
	// servers loaded: reads ended again and again (docs/benchmarks.md §7).
	maxSilences = 3
	// consumerAPITimeout bounds each of the lookup and resets that start a
	// read.
	consumerAPITimeout = 5 * time.Second
	// pullDrainMargin is added to a request's expiry when the next read of
	// the consumer waits for it to end.
	pullDrainMargin = 500 * time.Millisecond
)

// pullSilence: a read that hears nothing (no message, heartbeat or request
// end) for this long asks again with a new request: its request was lost
// with a consumer leader, or the server or this process is too loaded to
// keep the heartbeat's pace. A variable for tests.
var pullSilence = 2*pullHeartbeat + time.Second

// ErrConsumerGap ends a consumer read whose delivered messages are not
// contiguous: a message went to another reader (a pull request left by an
// earlier read, another process) or the consumer's state moved (a new
// consumer leader). What the read delivered is not the whole stream; the
// caller reads again from the start.
var ErrConsumerGap = errors.New("consumer read is not contiguous")

// ConsumerWatch reads a bucket through a node's consumer from the start:
// every stored entry (older revisions too, in order), then nil once the
// stored entries are all delivered, then changes as they happen, like a
// KV watcher.
//
// Every delivered message is checked, as an ordered consumer checks them:
// after the reset to the first sequence, the consumer sequences must run
// 1, 2, 3, … and the stream sequences must grow, and every idle heartbeat
// of the server must name the last consumer sequence this read received.
// Anything else ends the read with ErrConsumerGap before the next entry
// is delivered, so the entries before nil are exactly the consumer's
// filtered messages of the stream up to the last one's revision (a
// prefix of the stream as the consumer's server holds it), and nothing
// the consumer delivered is ever skipped.
type ConsumerWatch struct {
	updates  chan jetstream.KeyValueEntry
	stopOnce sync.Once
	stop     chan struct{}
	stopped  chan struct{} // closed when the reader is done, just before updates
	err      error
}

// WatchConsumer resets consumer (on bucket's stream) to the first sequence
// and starts reading it. It first waits (bounded by ctx) until the pull
// request of this process's previous read of the consumer has ended, so
// that request cannot take the messages of this read.
func WatchConsumer(ctx context.Context, js jetstream.JetStream, bucket, consumer string) (*ConsumerWatch, error) {
	return openWatch(ctx, js, bucket, consumer, true)
}

// openWatch waits for the consumer's gate and starts a read; without live
// it ends after the stored entries (and their nil).
func openWatch(ctx context.Context, js jetstream.JetStream, bucket, consumer string, live bool) (*ConsumerWatch, error) {
	gate := consumerGate(js.Conn(), wire.BucketStream(bucket), consumer)
	select {
	case <-gate:
	case <-ctx.Done():
		return nil, fmt.Errorf("read consumer %s of bucket %s: waiting for the previous read to end: %w", consumer, bucket, ctx.Err())
	}
	w, err := startWatch(ctx, js, bucket, consumer, gate, live)
	if err != nil {
		gate <- struct{}{}
		return nil, err
	}
	return w, nil
}

// startWatch starts a read holding the consumer's gate, which it gives
// back once the read's last request has expired.
func startWatch(ctx context.Context, js jetstream.JetStream, bucket, consumer string, gate chan struct{}, live bool) (*ConsumerWatch, error) {
	stream := wire.BucketStream(bucket)
	// Each API call is bounded on its own: one sent while the connection is
	// down may never be answered (a server restarting answers nothing until
	// its JetStream is up), and a clustered consumer answers only once it
	// has a leader.
	call := func(f func(ctx context.Context) error) error {
		cctx, cancel := context.WithTimeout(ctx, consumerAPITimeout)
		defer cancel()
		return f(cctx)
	}
	err := call(func(ctx context.Context) error { _, err := js.Consumer(ctx, stream, consumer); return err })
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("consumer %s of bucket %s: %w", consumer, bucket, wire.ErrNotProvisioned)
	} else if err != nil {
		return nil, fmt.Errorf("look up consumer %s of bucket %s: %w", consumer, bucket, err)
	}
	nc := js.Conn()
	inbox := nc.NewInbox()
	msgs := make(chan *nats.Msg, 2*pullBatch)
	sub, err := nc.ChanSubscribe(inbox, msgs)
	if err != nil {
		return nil, fmt.Errorf("read consumer %s of bucket %s: %w", consumer, bucket, err)
	}
	// Each message's pending count tells when the stored entries end.
	// nats-server acknowledges a write before it signals the write to the
	// consumers (which count it then), and a reset to the sequence a
	// consumer is already at (one never read is at 1) keeps that running
	// count: a listing right after a write could see none of it. A reset
	// from elsewhere recounts from the store, so move it to 2 first. (A
	// count that is short only ends the stored entries at an earlier
	// revision: still a contiguous prefix of the stream. An idle
	// heartbeat that names the read's last message ends them too.)
	// A reset then restarts the consumer's delivery sequence at 1
	// (nats-server's resetLocalStartingSeq, on every replica).
	for _, seq := range []uint64{2, 1} {
		if err := call(func(ctx context.Context) error {
			_, err := js.ResetConsumerToSequence(ctx, stream, consumer, seq)
			return err
		}); err != nil {
			_ = sub.Unsubscribe()
			return nil, fmt.Errorf("reset consumer %s of bucket %s to sequence %d: %w", consumer, bucket, seq, err)
		}
	}
	pr := &pullReader{
		nc: nc, sub: sub, msgs: msgs, inbox: inbox, bucket: bucket, consumer: consumer,
		next:     apiPrefix(js) + "CONSUMER.MSG.NEXT." + stream + "." + consumer,
		nextDseq: 1, live: live,
	}
	w := &ConsumerWatch{updates: make(chan jetstream.KeyValueEntry, pullBatch), stop: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		w.err = pr.run(w.updates, w.stop)
		close(w.stopped) // first: Err answers once Updates is closed
		close(w.updates)
		// Drop the inbox, and let the next read of the consumer begin
		// once the last request has expired.
		pr.drain()
		gate <- struct{}{}
	}()
	return w, nil
}

// apiPrefix is the JetStream API prefix js sends requests to.
func apiPrefix(js jetstream.JetStream) string {
	o := js.Options()
	switch {
	case o.APIPrefix != "":
		return strings.TrimSuffix(o.APIPrefix, ".") + "."
	case o.Domain != "":
		return "$JS." + o.Domain + ".API."
	}
	return "$JS.API."
}

// pullReader is one read of a consumer: its inbox, its one outstanding
// request, and the continuity of what it received.
type pullReader struct {
	nc               *nats.Conn
	sub              *nats.Subscription
	msgs             chan *nats.Msg
	inbox, next      string
	bucket, consumer string

	nextDseq  uint64    // consumer sequence the next message must carry
	lastSseq  uint64    // stream sequence of the last message
	want      int       // messages the outstanding request may still deliver; 0: none outstanding
	expiresAt time.Time // of the outstanding request
	live      bool      // go on after the stored entries
}

// request asks for the next batch, with the expiry and heartbeat of the
// phase the read is in.
func (r *pullReader) request(initDone bool) error {
	expires, heartbeat := storedExpires, storedHeartbeat
	if initDone {
		expires, heartbeat = pullExpires, pullHeartbeat
	}
	req, err := json.Marshal(struct {
		Batch     int           `json:"batch"`
		Expires   time.Duration `json:"expires"`
		Heartbeat time.Duration `json:"idle_heartbeat"`
	}{pullBatch, expires, heartbeat})
	if err != nil {
		return err
	}
	if err := r.nc.PublishRequest(r.next, r.inbox, req); err != nil {
		return fmt.Errorf("pull from consumer %s of bucket %s: %w", r.consumer, r.bucket, err)
	}
	r.want, r.expiresAt = pullBatch, time.Now().Add(expires)
	return nil
}

func (r *pullReader) gap(format string, args ...any) error {
	return fmt.Errorf("consumer %s of bucket %s: %w: %s", r.consumer, r.bucket, ErrConsumerGap, fmt.Sprintf(format, args...))
}

// run reads until stop is closed or the read fails; the error says why.
// The stored entries end (nil) with the first message the server sends
// with nothing pending after it, or with an idle heartbeat naming the last
// message this read received: the request waited with nothing to deliver,
// and nothing went elsewhere.
func (r *pullReader) run(out chan<- jetstream.KeyValueEntry, stop <-chan struct{}) error {
	send := func(e jetstream.KeyValueEntry) bool {
		select {
		case out <- e:
			return true
		case <-stop:
			return false
		}
	}
	initDone := false
	// storedEnd marks the end of the stored entries; false: stop reading.
	storedEnd := func() bool {
		initDone = true
		return send(nil) && r.live
	}
	// renew asks for the next batch once the outstanding request is over.
	renew := func() error {
		if r.want > 0 {
			return nil
		}
		return r.request(initDone)
	}
	if err := renew(); err != nil {
		return err
	}
	silence := time.NewTimer(pullSilence)
	defer silence.Stop()
	// silences: the silences in a row, each of which renewed the request,
	// since something was last heard. A renewal keeps the read's proof:
	// whatever the new request brings is checked as everything else (the
	// consumer sequence must follow the last one received, a heartbeat must
	// name it), so a message a lost request took ends the read with
	// ErrConsumerGap as before, and a contiguous read goes on without a
	// re-watch (which costs a lookup, two resets and the whole stream:
	// under a load that delays heartbeats, re-watches of every node fed
	// the load).
	silences := 0
	for {
		var m *nats.Msg
		select {
		case <-stop:
			return nil
		case <-silence.C:
			if silences == maxSilences {
				return fmt.Errorf("consumer %s of bucket %s: nothing heard for %d x %s (no message, heartbeat or end of request), after asking again %d times: the pull request was lost", r.consumer, r.bucket, maxSilences+1, pullSilence, maxSilences)
			}
			silences++
			r.want = 0
			if err := r.request(initDone); err != nil {
				return err
			}
			silence.Reset(pullSilence)
			continue
		case m = <-r.msgs:
		}
		silences = 0
		silence.Reset(pullSilence)
		if status := m.Header.Get("Status"); status != "" && len(m.Data) == 0 {
			if err := r.status(m, status); err != nil {
				return err
			}
			// A heartbeat that agrees: everything the consumer has was
			// delivered, contiguously.
			if status == "100" && !initDone && !storedEnd() {
				return nil
			}
			if err := renew(); err != nil {
				return err
			}
			continue
		}
		e, err := r.entry(m)
		if err != nil {
			return err
		}
		if !send(e) || (!initDone && e.delta == 0 && !storedEnd()) {
			return nil
		}
		if err := renew(); err != nil {
			return err
		}
	}
}

// entry checks a delivered message's place in the read and makes it an
// Entry.
func (r *pullReader) entry(m *nats.Msg) (*Entry, error) {
	meta, err := m.Metadata()
	if err != nil {
		return nil, fmt.Errorf("consumer %s of bucket %s: message without metadata: %w", r.consumer, r.bucket, err)
	}
	if meta.Sequence.Consumer != r.nextDseq {
		return nil, r.gap("received consumer sequence %d, expected %d", meta.Sequence.Consumer, r.nextDseq)
	}
	if meta.Sequence.Stream <= r.lastSseq {
		return nil, r.gap("stream sequence %d after %d", meta.Sequence.Stream, r.lastSseq)
	}
	r.nextDseq, r.lastSseq = meta.Sequence.Consumer+1, meta.Sequence.Stream
	r.want--
	e := &Entry{
		bucket:   r.bucket,
		key:      strings.TrimPrefix(m.Subject, "$KV."+r.bucket+"."),
		value:    m.Data,
		revision: meta.Sequence.Stream,
		created:  meta.Timestamp,
		delta:    meta.NumPending,
	}
	switch m.Header.Get(kvOperation) {
	case "DEL":
		e.op = jetstream.KeyValueDelete
	case "PURGE":
		e.op = jetstream.KeyValuePurge
	}
	return e, nil
}

// status handles a status message of the server on the read's inbox.
func (r *pullReader) status(m *nats.Msg, status string) error {
	switch status {
	case "100": // idle heartbeat: the consumer's last delivered sequence
		last := m.Header.Get("Nats-Last-Consumer")
		n, err := strconv.ParseUint(last, 10, 64)
		if err != nil {
			return fmt.Errorf("consumer %s of bucket %s: heartbeat with a bad Nats-Last-Consumer %q", r.consumer, r.bucket, last)
		}
		if n != r.nextDseq-1 {
			return r.gap("the server delivered up to consumer sequence %d, this read received up to %d", n, r.nextDseq-1)
		}
		return nil
	case "404", "408": // no messages or the request expired
		r.want = 0
		return nil
	case "409":
		if m.Header.Get("Description") == "Leadership Change" {
			// The consumer has a new leader, which does not have the
			// request: ask it again (what it delivers is checked as
			// everything else).
			r.want = 0
			return nil
		}
	}
	r.want = 0
	return fmt.Errorf("consumer %s of bucket %s: pull request ended: %s %s", r.consumer, r.bucket, status, m.Header.Get("Description"))
}

// drain drops the read's inbox at once (a server then drops the read's
// waiting request as soon as it sees nobody listens: at once, or within
// 2 s on a server with leaf-node or gateway connections) and waits until
// the request has expired in any case, so the next read of the consumer
// through this connection cannot meet it.
func (r *pullReader) drain() {
	_ = r.sub.Unsubscribe()
	if r.want == 0 {
		return
	}
	time.Sleep(time.Until(r.expiresAt.Add(pullDrainMargin)))
}

// Updates delivers entries, nil after the stored ones; it is closed when
// the watch ends (Err says why).
func (w *ConsumerWatch) Updates() <-chan jetstream.KeyValueEntry { return w.updates }

// Err is why the watch ended, once Updates is closed: nil after Stop.
func (w *ConsumerWatch) Err() error {
	select {
	case <-w.stopped:
		return w.err
	default:
		return nil
	}
}

// Stop ends the watch and waits for its reader (not for the end of its
// last pull request: the next read of the consumer waits for that).
func (w *ConsumerWatch) Stop() {
	w.stopOnce.Do(func() {
		close(w.stop)
	})
	<-w.stopped
}

// consumerGates serializes the reads of one consumer in this process: a
// pull consumer hands each message to one waiting request, and a reset
// restarts everyone, so two reads at once would each miss entries (and
// ErrConsumerGap would end them). A read holds its consumer's gate until
// its last pull request has ended.
var consumerGates sync.Map // gateKey → chan struct{} holding one token when free

// gateKey names a consumer read through one connection (a closed
// connection's requests have no one listening: the server drops them).
type gateKey struct {
	nc               *nats.Conn
	stream, consumer string
}

func consumerGate(nc *nats.Conn, stream, consumer string) chan struct{} {
	free := make(chan struct{}, 1)
	free <- struct{}{}
	g, _ := consumerGates.LoadOrStore(gateKey{nc, stream, consumer}, free)
	return g.(chan struct{})
}

// consumerKeysAttempts bounds ConsumerKeys' reads when a read is not
// contiguous.
const consumerKeysAttempts = 3

// ConsumerKeys lists the keys whose latest entry is not a deletion, read
// through consumer from the start. Listings of the same consumer in this
// process run one at a time; a read that is not contiguous
// (ErrConsumerGap) is read again, at most consumerKeysAttempts times.
func ConsumerKeys(ctx context.Context, js jetstream.JetStream, bucket, consumer string) ([]string, error) {
	var err error
	for range consumerKeysAttempts {
		var keys []string
		if keys, err = consumerKeys(ctx, js, bucket, consumer); !errors.Is(err, ErrConsumerGap) {
			return keys, err
		}
	}
	return nil, fmt.Errorf("list keys of %s (%d reads): %w", bucket, consumerKeysAttempts, err)
}

func consumerKeys(ctx context.Context, js jetstream.JetStream, bucket, consumer string) ([]string, error) {
	w, err := openWatch(ctx, js, bucket, consumer, false)
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	live := map[string]bool{}
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return nil, fmt.Errorf("reading keys of %s ended early: %w", bucket, w.Err())
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
