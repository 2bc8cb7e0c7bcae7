package testutil

import (
	"fmt"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// Event is one event a Recorder recorded.
type Event struct {
	Pod                   *v1.Pod
	Type, Reason, Message string
}

// String is "<type> <reason> <message>".
func (e Event) String() string { return e.Type + " " + e.Reason + " " + e.Message }

// Recorder records the events a component emits. Its Eventf is the one
// the Recorder interfaces of the sources, the actors and kuberuntime ask
// for (record.EventRecorder's). The zero value is ready to use.
type Recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *Recorder) Eventf(pod *v1.Pod, eventType, reason, messageFmt string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, Event{Pod: pod, Type: eventType, Reason: reason, Message: fmt.Sprintf(messageFmt, args...)})
}

// Events returns the events recorded so far, oldest first.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// Lines returns the events recorded so far as "<type> <reason> <message>".
func (r *Recorder) Lines() []string {
	var out []string
	for _, e := range r.Events() {
		out = append(out, e.String())
	}
	return out
}

// Has reports whether an event with reason was recorded.
func (r *Recorder) Has(reason string) bool {
	for _, e := range r.Events() {
		if e.Reason == reason {
			return true
		}
	}
	return false
}

// Expect reports with t.Errorf each of reasons no recorded event has,
// with the events that were recorded.
func (r *Recorder) Expect(t testing.TB, reasons ...string) {
	t.Helper()
	for _, reason := range reasons {
		if !r.Has(reason) {
			t.Errorf("no %s event; recorded: %q", reason, r.Lines())
		}
	}
}
