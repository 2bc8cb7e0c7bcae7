// Package mux is the config mux: it merges what every pod source sends (SET
// snapshots or incremental ADD/UPDATE/DELETE/REMOVE) into one stream of
// ADD/UPDATE/DELETE/REMOVE/RECONCILE updates for the supervisor, as the
// kubelet's pkg/kubelet/config does.
//
//	file source   ──Channel("file")──┐
//	remote source ──Channel("remote")┼─> Mux ──out(PodUpdate)──> supervisor
//	                                 └─> OnReady(SourcesReady) once every source spoke
//
// The mux keeps each source's pods by UID, rejects a pod that another source
// (or the same source, under another UID) already delivers, and reports a
// source ready once it delivered its first state. It does no I/O.
package mux

import (
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/record"
)

// Mux merges pod sources. All methods are safe for concurrent use. The out
// and OnReady callbacks are called with the mux's lock held, in order: they
// must not block and must not call back into the Mux.
type Mux struct {
	mu       sync.Mutex
	out      func(messages.PodUpdate)
	recorder record.EventRecorder
	// pods per source, by UID, and who holds each namespace/name.
	pods   map[string]map[types.UID]*v1.Pod
	byName map[string]owner
	// registered sources (Channel called) and those that delivered.
	registered []string
	seen       map[string]bool
	onReady    []func(messages.SourcesReady)
	ready      bool
}

// New returns a mux that delivers merged updates to out.
func New(out func(messages.PodUpdate)) *Mux {
	return &Mux{
		out:    out,
		pods:   map[string]map[types.UID]*v1.Pod{},
		byName: map[string]owner{},
		seen:   map[string]bool{},
	}
}

// SetRecorder sets where DuplicatePod events go; nil disables events.
func (m *Mux) SetRecorder(r record.EventRecorder) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recorder = r
}

// Channel registers source and returns its input. Every update given to
// the returned func is merged as coming from source, whatever its Source
// field says. Registering the same source twice returns an equivalent input.
func (m *Mux) Channel(source string) func(messages.PodUpdate) {
	m.mu.Lock()
	if _, ok := m.pods[source]; !ok {
		m.pods[source] = map[types.UID]*v1.Pod{}
		m.registered = append(m.registered, source)
	}
	m.mu.Unlock()
	return func(u messages.PodUpdate) { m.merge(source, u) }
}

// SourcesReady says whether every named source delivered its first state.
// messages.SourceAll (or no argument) means every registered source.
func (m *Mux) SourcesReady(sources ...string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(sources) == 0 || (len(sources) == 1 && sources[0] == messages.SourceAll) {
		return m.allSeenLocked()
	}
	for _, s := range sources {
		if !m.seen[s] {
			return false
		}
	}
	return true
}

// OnReady registers f to be called once, when every registered source has
// delivered its first state. If that already happened f is called now.
func (m *Mux) OnReady(f func(messages.SourcesReady)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ready {
		f(messages.SourcesReady{Sources: append([]string(nil), m.registered...)})
		return
	}
	m.onReady = append(m.onReady, f)
}

func (m *Mux) allSeenLocked() bool {
	if len(m.registered) == 0 {
		return false
	}
	for _, s := range m.registered {
		if !m.seen[s] {
			return false
		}
	}
	return true
}

// merge applies one source update and emits the resulting changes.
func (m *Mux) merge(source string, u messages.PodUpdate) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.pods[source]; !ok {
		m.pods[source] = map[types.UID]*v1.Pod{}
		m.registered = append(m.registered, source)
	}
	c := m.applyLocked(source, u)
	m.seen[source] = true

	sortByCreation(c.adds)
	for _, out := range []messages.PodUpdate{
		{Op: messages.OpRemove, Pods: c.removes},
		{Op: messages.OpAdd, Pods: c.adds},
		{Op: messages.OpUpdate, Pods: c.updates},
		{Op: messages.OpDelete, Pods: c.deletes},
		{Op: messages.OpReconcile, Pods: c.reconciles},
	} {
		if len(out.Pods) == 0 {
			continue
		}
		out.Source = source
		m.out(out)
	}

	if !m.ready && m.allSeenLocked() {
		m.ready = true
		ready := messages.SourcesReady{Sources: append([]string(nil), m.registered...)}
		for _, f := range m.onReady {
			f(ready)
		}
		m.onReady = nil
	}
}

// sortByCreation orders pods oldest first; ties keep namespace/name order
// so the result is deterministic.
func sortByCreation(pods []*v1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
}

// Replay delivers every source's current pods again as ADDs and reports
// whether all sources are ready. The agent calls it when the supervisor was
// restarted by supervision and has lost its desired state: the new pod
// actors adopt what is running.
func (m *Mux) Replay() (messages.SourcesReady, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, source := range m.registered {
		var pods []*v1.Pod
		for _, p := range m.pods[source] {
			pods = append(pods, p.DeepCopy())
		}
		if len(pods) == 0 {
			continue
		}
		sortByCreation(pods)
		m.out(messages.PodUpdate{Op: messages.OpAdd, Pods: pods, Source: source})
	}
	return messages.SourcesReady{Sources: append([]string(nil), m.registered...)}, m.ready
}

// Pods returns copies of the pods source currently delivers.
func (m *Mux) Pods(source string) []*v1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*v1.Pod, 0, len(m.pods[source]))
	for _, p := range m.pods[source] {
		out = append(out, p.DeepCopy())
	}
	return out
}
