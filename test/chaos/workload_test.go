package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/messages/wire"
)

// writeTimeout bounds one operator write (as actorletctl's request timeout
// does): a write that times out is unacknowledged, its outcome unknown.
const writeTimeout = 5 * time.Second

// workload is the operator: it keeps creating, updating and deleting node
// pods and fleet pods in the desired bucket, as actorletctl apply and
// delete do, and records every write and whether it was acknowledged.
type workload struct {
	m          *model
	kv         jetstream.KeyValue
	rnd        *rand.Rand
	nodes      []string
	nodeLabels map[string]map[string]string
	perNode    int // node pods kept alive per node (about)
	fleetPods  int // fleet pods kept alive (about)
	every      time.Duration
	next       int
}

// run writes until ctx ends.
func (w *workload) run(ctx context.Context) {
	tick := time.NewTicker(w.every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		w.step(ctx)
	}
}

// live is the pods that were acknowledged and are not being deleted.
func (w *workload) live() (nodePods, fleetPods []*podState) {
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	for _, name := range w.m.sortedNamesLocked() {
		p := w.m.pods[name]
		if !p.protected() {
			continue
		}
		if p.fleet {
			fleetPods = append(fleetPods, p)
		} else {
			nodePods = append(nodePods, p)
		}
	}
	return nodePods, fleetPods
}

func (w *workload) step(ctx context.Context) {
	nodePods, fleetPods := w.live()
	r := w.rnd.Float64()
	switch {
	case len(fleetPods) < w.fleetPods && r < 0.15:
		w.create(ctx, true)
	case len(nodePods) < w.perNode*len(w.nodes) && r < 0.5:
		w.create(ctx, false)
	case r < 0.75 && len(nodePods)+len(fleetPods) > 0:
		all := append(nodePods, fleetPods...)
		w.update(ctx, all[w.rnd.Intn(len(all))])
	case len(nodePods)+len(fleetPods) > 0:
		all := append(nodePods, fleetPods...)
		w.delete(ctx, all[w.rnd.Intn(len(all))])
	default:
		w.create(ctx, false)
	}
	// Retry the deletes that were not acknowledged: the key may still be
	// there, and a deleted key must end deleted.
	w.m.mu.Lock()
	var retry []*podState
	for _, p := range w.m.pods {
		if !p.deleteIssued.IsZero() && p.deleteAcked.IsZero() {
			retry = append(retry, p)
		}
	}
	w.m.mu.Unlock()
	for _, p := range retry {
		w.delete(ctx, p)
	}
}

func (w *workload) create(ctx context.Context, fleet bool) {
	w.next++
	p := &podState{uid: types.UID(fmt.Sprintf("%s-%05d", w.m.run, w.next))}
	if fleet {
		p.name = fmt.Sprintf("f%05d", w.next)
		p.fleet = true
		p.sel = map[string]string{"chaos": "yes"}
		if w.rnd.Intn(2) == 0 {
			p.sel["chaos-group"] = []string{"a", "b"}[w.rnd.Intn(2)]
		}
		p.key = wire.DesiredFleetKey(namespace, p.name)
		p.targets = nodesMatching(w.nodeLabels, p.sel)
	} else {
		p.name = fmt.Sprintf("p%05d", w.next)
		p.node = w.nodes[w.rnd.Intn(len(w.nodes))]
		p.key = wire.DesiredNodeKey(p.node, namespace, p.name)
		p.targets = []string{p.node}
	}
	w.m.mu.Lock()
	w.m.pods[p.name] = p
	w.m.mu.Unlock()
	w.put(ctx, p, "create")
}

func (w *workload) update(ctx context.Context, p *podState) { w.put(ctx, p, "update") }

func (w *workload) put(ctx context.Context, p *podState, kind string) {
	w.m.mu.Lock()
	p.gen++
	gen := p.gen
	w.m.mu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	_, err := w.kv.Put(wctx, p.key, p.podJSON(w.m.run, gen))
	cancel()
	if ctx.Err() != nil {
		return // the run ended: not an operation
	}
	w.m.op(kind, err)
	if err != nil {
		return
	}
	w.m.mu.Lock()
	if gen > p.ackedGen {
		p.ackedGen = gen
	}
	if p.createAcked.IsZero() {
		p.createAcked = time.Now()
	}
	w.m.mu.Unlock()
}

func (w *workload) delete(ctx context.Context, p *podState) {
	w.m.mu.Lock()
	if p.deleteIssued.IsZero() {
		p.deleteIssued = time.Now()
	}
	w.m.mu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	err := w.kv.Delete(wctx, p.key)
	cancel()
	if ctx.Err() != nil {
		return
	}
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		err = nil
	}
	w.m.op("delete", err)
	if err == nil {
		w.m.mu.Lock()
		p.deleteAcked = time.Now()
		w.m.mu.Unlock()
	}
}
