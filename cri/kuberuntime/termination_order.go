package kuberuntime

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages/podrules"
	"github.com/actorlet/actorlet/messages/seconds"
)

// terminationOrdering makes a pod with sidecars stop as the kubelet does:
// regular containers first, all at once; then the sidecars in reverse
// spec order, each once every regular container and every sidecar after it
// has stopped. Each container still runs its preStop hook at once; only
// the stop signal waits for its turn, and the wait counts against its grace
// period.
type terminationOrdering struct {
	// done is closed when the container of that name has stopped. The
	// maps are read-only once built: kills run in parallel.
	done map[string]*stopGate
	// after lists, per container, the containers that must stop first.
	after map[string][]chan struct{}
}

// newTerminationOrdering orders the kill of running (by name) for pod, or
// returns nil when the pod has no sidecar and the order does not matter.
func newTerminationOrdering(pod *v1.Pod, running []*cri.Container) *terminationOrdering {
	if pod == nil || !hasSidecars(pod) {
		return nil
	}
	o := &terminationOrdering{done: map[string]*stopGate{}, after: map[string][]chan struct{}{}}
	for _, c := range running {
		if _, ok := o.done[c.Name]; !ok {
			o.done[c.Name] = &stopGate{ch: make(chan struct{})}
		}
	}
	var regular []chan struct{}
	for _, c := range pod.Spec.Containers {
		if g, ok := o.done[c.Name]; ok {
			regular = append(regular, g.ch)
		}
	}
	// Walk sidecars from the last: each waits for the regular containers
	// and for the sidecars after it.
	later := append([]chan struct{}(nil), regular...)
	for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
		c := &pod.Spec.InitContainers[i]
		g, ok := o.done[c.Name]
		if !ok || !podrules.IsSidecar(c) {
			continue
		}
		o.after[c.Name] = append([]chan struct{}(nil), later...)
		later = append(later, g.ch)
	}
	return o
}

// waitForTurn blocks until the containers that must stop before name have
// stopped, grace seconds passed or ctx ended, and returns the whole seconds
// waited.
func (o *terminationOrdering) waitForTurn(ctx context.Context, m *Manager, name string, grace int64) int64 {
	if o == nil || len(o.after[name]) == 0 {
		return 0
	}
	start := m.opts.Clock.Now()
	timer := m.opts.Clock.NewTimer(seconds.Duration(grace))
	defer timer.Stop()
	for _, ch := range o.after[name] {
		select {
		case <-ch:
		case <-timer.C():
			return int64(m.opts.Clock.Since(start).Seconds())
		case <-ctx.Done():
			return int64(m.opts.Clock.Since(start).Seconds())
		}
	}
	return int64(m.opts.Clock.Since(start).Seconds())
}

// stopped marks name as stopped (once per kill; unknown names are ignored).
func (o *terminationOrdering) stopped(name string) {
	if o == nil {
		return
	}
	if g, ok := o.done[name]; ok {
		g.once.Do(func() { close(g.ch) })
	}
}

// stopGate is closed once its container stopped.
type stopGate struct {
	ch   chan struct{}
	once sync.Once
}
