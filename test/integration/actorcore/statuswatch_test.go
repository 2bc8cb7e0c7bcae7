package actorcore

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/messages/wire"
)

// statusUpdate is one change of a status entry as a watcher saw it.
type statusUpdate struct {
	at      time.Time
	name    string
	pod     *v1.Pod // nil when the entry was deleted
	deleted bool
}

// statusWatch follows the node's status bucket entries matching a filter
// and keeps both their latest values and every change, as an operator's
// `nats kv watch` would.
type statusWatch struct {
	t       *testing.T
	mu      sync.Mutex
	latest  map[string]*v1.Pod
	history []statusUpdate
}

// watchStatus watches the status entries of the pod name ("" for every pod
// of the node) until the test ends.
func (e *env) watchStatus(name string) *statusWatch {
	e.t.Helper()
	filter := wire.EncodeName(e.node) + ".>"
	if name != "" {
		filter = e.statusKey(name)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := e.status.Watch(ctx, filter)
	if err != nil {
		cancel()
		e.t.Fatalf("watch status %s: %v", filter, err)
	}
	sw := &statusWatch{t: e.t, latest: map[string]*v1.Pod{}}
	done := make(chan struct{})
	e.t.Cleanup(func() {
		_ = w.Stop()
		cancel()
		<-done
	})
	go func() {
		defer close(done)
		for entry := range w.Updates() {
			if entry == nil { // end of the initial values
				continue
			}
			sw.add(entry)
		}
	}()
	return sw
}

func (sw *statusWatch) add(entry jetstream.KeyValueEntry) {
	u := statusUpdate{at: time.Now(), name: entry.Key()}
	if entry.Operation() != jetstream.KeyValuePut {
		u.deleted = true
	} else {
		var pod v1.Pod
		if err := json.Unmarshal(entry.Value(), &pod); err != nil {
			sw.t.Errorf("decode status entry %s: %v", entry.Key(), err)
			return
		}
		u.pod = &pod
	}
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.history = append(sw.history, u)
	if u.deleted {
		delete(sw.latest, u.name)
	} else {
		sw.latest[u.name] = u.pod
	}
}

// snapshot returns the latest pods (by status key) and the history so far.
func (sw *statusWatch) snapshot() (map[string]*v1.Pod, []statusUpdate) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	latest := make(map[string]*v1.Pod, len(sw.latest))
	for k, v := range sw.latest {
		latest[k] = v
	}
	return latest, append([]statusUpdate(nil), sw.history...)
}
