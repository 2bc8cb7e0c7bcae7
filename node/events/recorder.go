// Package events records Kubernetes-style events (v1.Event) about pods and
// the node and publishes them on the bus, on subjects wire.EventSubject,
// which the ACTORLET_EVENTS stream keeps. They are published as plain NATS
// messages, without asking the stream for an acknowledgement: events are
// best effort (as the kubelet's), a failed JetStream publish was dropped
// too, and the ack was one more message per event (three per pod start)
// and a round trip that held the next event back.
//
// Eventf never blocks its caller: events go through a bounded queue to one
// publishing goroutine, and are dropped (and counted) when the queue is full.
// Identical events (same object, type, reason and message) repeated within
// the dedup window are folded into one: the same event name is published
// again with its count bumped and lastTimestamp moved, as the API server's
// event correlator does.
package events

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/actorlet/actorlet/messages/record"
	"github.com/actorlet/actorlet/messages/wire"
)

// Component is the event source component.
const Component = "actorlet"

// Defaults.
const (
	DefaultQueueSize   = 1000
	DefaultDedupWindow = 10 * time.Minute
	maxCached          = 4096
)

// publisher is the part of nats.Conn the recorder uses.
type publisher interface {
	Publish(subject string, payload []byte) error
}

var _ record.EventRecorder = &Recorder{}

// Option tunes a Recorder.
type Option func(*Recorder)

// WithClock sets the clock for event timestamps and the dedup window.
func WithClock(c clock.Clock) Option { return func(r *Recorder) { r.clock = c } }

// WithQueueSize bounds the number of events waiting to be published.
func WithQueueSize(n int) Option { return func(r *Recorder) { r.queueSize = n } }

// WithDedupWindow sets how long an identical event is folded into the
// previous one.
func WithDedupWindow(d time.Duration) Option { return func(r *Recorder) { r.window = d } }

// Recorder publishes events. Create it with NewRecorder and Stop it when
// done; it is safe for concurrent use.
type Recorder struct {
	pub       publisher
	node      string
	clock     clock.Clock
	window    time.Duration
	queueSize int

	mu      sync.Mutex
	stopped bool
	queue   chan outgoing
	last    map[dedupKey]*v1.Event
	done    chan struct{}

	dropped   atomic.Uint64
	failed    atomic.Uint64
	published atomic.Uint64
}

type outgoing struct {
	subject string
	data    []byte
}

type dedupKey struct {
	uid                     types.UID
	namespace, name         string
	eventType, reason, text string
}

// NewRecorder starts a recorder publishing through js's connection for
// node nodeName.
func NewRecorder(js jetstream.JetStream, nodeName string, opts ...Option) *Recorder {
	return newRecorder(js.Conn(), nodeName, opts...)
}

func newRecorder(pub publisher, nodeName string, opts ...Option) *Recorder {
	if nodeName == "" {
		nodeName = hostname()
	}
	r := &Recorder{
		pub: pub, node: nodeName,
		clock: clock.RealClock{}, window: DefaultDedupWindow, queueSize: DefaultQueueSize,
		last: map[dedupKey]*v1.Event{}, done: make(chan struct{}),
	}
	for _, o := range opts {
		o(r)
	}
	if r.queueSize < 1 {
		r.queueSize = 1
	}
	r.queue = make(chan outgoing, r.queueSize)
	go r.run()
	return r
}

// Eventf records an event about pod, or about the node when pod is nil.
// eventType is v1.EventTypeNormal or v1.EventTypeWarning.
func (r *Recorder) Eventf(pod *v1.Pod, eventType, reason, messageFmt string, args ...any) {
	if eventType != v1.EventTypeNormal && eventType != v1.EventTypeWarning {
		klog.ErrorS(fmt.Errorf("event type %q is neither %s nor %s", eventType, v1.EventTypeNormal, v1.EventTypeWarning),
			"Dropping event", "reason", reason)
		return
	}
	message := truncateMessage(fmt.Sprintf(messageFmt, args...))
	ref := r.reference(pod)
	klog.V(2).InfoS("Event occurred", "object", klog.KRef(ref.Namespace, ref.Name), "kind", ref.Kind,
		"type", eventType, "reason", reason, "message", message)

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		r.dropped.Add(1)
		return
	}
	ev := r.correlateLocked(ref, eventType, reason, message)
	data, err := json.Marshal(ev)
	if err != nil {
		klog.ErrorS(err, "Cannot encode event", "reason", reason)
		return
	}
	subject := wire.EventSubject(r.node, podNamespace(pod), podName(pod))
	select {
	case r.queue <- outgoing{subject: subject, data: data}:
	default:
		if n := r.dropped.Add(1); n == 1 || n%100 == 0 {
			klog.InfoS("Event queue full, dropping events", "dropped", n)
		}
	}
}

// MaxMessageBytes bounds an event's message, as client-go's recorders and
// the events API bound it (1 KiB): an error quoting a huge value must not
// make a huge event (nor one larger than a bus message).
const MaxMessageBytes = 1024

func truncateMessage(m string) string {
	if len(m) <= MaxMessageBytes {
		return m
	}
	const suffix = " ..."
	return m[:MaxMessageBytes-len(suffix)] + suffix
}

// correlateLocked returns the event to publish: a new one, or the previous
// identical one with its count bumped when it is within the window.
func (r *Recorder) correlateLocked(ref v1.ObjectReference, eventType, reason, message string) *v1.Event {
	now := r.clock.Now()
	key := dedupKey{uid: ref.UID, namespace: ref.Namespace, name: ref.Name, eventType: eventType, reason: reason, text: message}
	if prev, ok := r.last[key]; ok && now.Sub(prev.LastTimestamp.Time) <= r.window {
		ev := prev.DeepCopy()
		ev.Count++
		ev.LastTimestamp = metav1.NewTime(now)
		r.last[key] = ev
		return ev
	}
	if len(r.last) >= maxCached {
		for k, e := range r.last {
			if now.Sub(e.LastTimestamp.Time) > r.window {
				delete(r.last, k)
			}
		}
		if len(r.last) >= maxCached { // all recent: start over rather than grow
			r.last = map[dedupKey]*v1.Event{}
		}
	}
	namespace := ref.Namespace
	if namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	ev := &v1.Event{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s.%x", ref.Name, now.UnixNano()),
			Namespace: namespace,
		},
		InvolvedObject:      ref,
		Reason:              reason,
		Message:             message,
		Type:                eventType,
		Source:              v1.EventSource{Component: Component, Host: r.node},
		FirstTimestamp:      metav1.NewTime(now),
		LastTimestamp:       metav1.NewTime(now),
		Count:               1,
		ReportingController: Component,
		ReportingInstance:   r.node,
	}
	r.last[key] = ev
	return ev.DeepCopy()
}

func (r *Recorder) reference(pod *v1.Pod) v1.ObjectReference {
	if pod == nil {
		return v1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: r.node, UID: types.UID(r.node)}
	}
	return v1.ObjectReference{
		Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name,
		UID: pod.UID, ResourceVersion: pod.ResourceVersion,
	}
}

func podNamespace(pod *v1.Pod) string {
	if pod == nil {
		return ""
	}
	return pod.Namespace
}

func podName(pod *v1.Pod) string {
	if pod == nil {
		return ""
	}
	return pod.Name
}

// run publishes queued events until Stop closes the queue.
func (r *Recorder) run() {
	defer close(r.done)
	for out := range r.queue {
		// While the connection is down, nats.go buffers the message and
		// sends it once it is back.
		if err := r.pub.Publish(out.subject, out.data); err != nil {
			r.failed.Add(1)
			klog.V(2).InfoS("Cannot publish event", "subject", out.subject, "err", err)
			continue
		}
		r.published.Add(1)
	}
}

// Stop publishes what is queued and stops; later events are dropped.
func (r *Recorder) Stop() {
	r.mu.Lock()
	if !r.stopped {
		r.stopped = true
		close(r.queue)
	}
	r.mu.Unlock()
	<-r.done
}

// Stats are the recorder's counters.
type Stats struct {
	Published, Failed, Dropped uint64
}

// Stats returns how many events were published (handed to the
// connection), failed to publish (refused by it: closed, too large), and
// were dropped because the queue was full or the recorder stopped.
func (r *Recorder) Stats() Stats {
	return Stats{Published: r.published.Load(), Failed: r.failed.Load(), Dropped: r.dropped.Load()}
}

// hostname is used when the node name is empty.
func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return h
}
