package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/test/testutil"
)

// goneBound is how long a deleted key's pod may keep running once the
// delete is acknowledged and no fault is being injected.
const goneBound = 30 * time.Second

// placement names a pod on a node.
type placement struct{ node, pod string }

// seen is what the checker observed of one pod on one node in /proc.
type seen struct {
	pids    map[int]bool // every container process it ever had
	running []int        // its processes at the last scan
}

// checker watches the invariants all through the run, from the runtime's
// side (the container processes in /proc, whose environment names run,
// pod and node) and from the agents' status entries (a watch of the
// status bucket):
//
//  1. a pod whose key certainly exists is never killed: its process never
//     disappears or changes, its status entry is never deleted;
//  2. every pod runs exactly once: one process at a time, never a second
//     one over its life;
//  3. a deleted key's pod is gone within goneBound (once no fault is
//     active);
//  4. (at the end, converged) every key of the bucket runs on its nodes
//     with a Running status, and nothing else runs.
type checker struct {
	m *model

	mu     sync.Mutex
	procs  map[placement]*seen
	status map[string]bool // status key → Running with its container running
}

func newChecker(m *model) *checker {
	return &checker{m: m, procs: map[placement]*seen{}, status: map[string]bool{}}
}

// scan reads /proc once and checks invariants 1–3.
func (c *checker) scan() {
	now := map[placement][]int{}
	prefix := envRun + "=" + c.m.run
	for _, p := range testutil.Leaders(testutil.Procs(func(_, env []string) bool {
		for _, kv := range env {
			if kv == prefix {
				return true
			}
		}
		return false
	})) {
		var pl placement
		for _, kv := range p.Env {
			if v, ok := strings.CutPrefix(kv, envPod+"="); ok {
				pl.pod = v
			}
			if v, ok := strings.CutPrefix(kv, envNode+"="); ok {
				pl.node = v
			}
		}
		now[pl] = append(now[pl], p.PID)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	active, lastHeal := c.m.activeLocked()
	for pl, pids := range now {
		s := c.procs[pl]
		if s == nil {
			s = &seen{pids: map[int]bool{}}
			c.procs[pl] = s
		}
		for _, pid := range pids {
			s.pids[pid] = true
		}
		p := c.m.pods[pl.pod]
		switch {
		case p == nil:
			c.m.violateLocked("unknown pod", pl.pod, pl.node, fmt.Sprintf("processes %v of a pod the operator never wrote", pids))
			continue
		case !p.targets1(pl.node):
			c.m.violateLocked("wrong node", pl.pod, pl.node, fmt.Sprintf("processes %v on a node it does not select (%v)", pids, p.targets))
		}
		if len(pids) > 1 {
			c.m.violateLocked("ran twice", pl.pod, pl.node, fmt.Sprintf("%d processes at once: %v", len(pids), pids))
		}
		if len(s.pids) > 1 {
			c.m.violateLocked("ran again", pl.pod, pl.node, fmt.Sprintf("processes over its life: %v (its container never exits by itself)", keys(s.pids)))
		}
		if !p.deleteAcked.IsZero() && !active {
			from := p.deleteAcked
			if lastHeal.After(from) {
				from = lastHeal
			}
			if time.Since(from) > goneBound {
				c.m.violateLocked("not gone", pl.pod, pl.node, fmt.Sprintf("process %v still runs %s after its delete was acknowledged (%s) and %s after the last fault", pids, time.Since(p.deleteAcked).Round(time.Second), c.m.since(p.deleteAcked), time.Since(from).Round(time.Second)))
			}
		}
	}
	for pl, s := range c.procs {
		if _, ok := now[pl]; !ok && len(s.running) > 0 {
			if p := c.m.pods[pl.pod]; p != nil && p.protected() {
				c.m.violateLocked("killed", pl.pod, pl.node, fmt.Sprintf("process %v gone while its key exists (created %s, generation %d acknowledged)", s.running, c.m.since(p.createAcked), p.ackedGen))
			}
		}
		s.running = now[pl]
	}
}

// running reports whether pod runs on node (one process) with a Running
// status.
func (c *checker) runningLocked(p *podState, node string) bool {
	s := c.procs[placement{node, p.name}]
	return s != nil && len(s.running) == 1 && c.status[p.statusKey(node)]
}

// recovered reports whether every pod acknowledged before t and still
// protected runs on every node it selects, with a Running status.
func (c *checker) recovered(t time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	for _, p := range c.m.pods {
		if !p.protected() || p.createAcked.After(t) {
			continue
		}
		for _, n := range p.targets {
			if !c.runningLocked(p, n) {
				return false
			}
		}
	}
	return true
}

// watchStatus follows the status bucket until ctx ends (re-watching after
// any break): it keeps which pods are Running and records the deletion of
// a protected pod's entry as a violation.
func (c *checker) watchStatus(ctx context.Context, js jetstream.JetStream) {
	for ctx.Err() == nil {
		c.watchStatusOnce(ctx, js)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (c *checker) watchStatusOnce(ctx context.Context, js jetstream.JetStream) {
	octx, cancel := context.WithTimeout(ctx, writeTimeout)
	kv, err := js.KeyValue(octx, wire.StatusBucket)
	cancel()
	if err != nil {
		return
	}
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return
	}
	defer func() { _ = w.Stop() }()
	for e := range w.Updates() {
		if e == nil {
			continue // initial values done
		}
		node, pod, ok := parseStatusKey(e.Key())
		if !ok {
			continue
		}
		c.mu.Lock()
		switch e.Operation() {
		case jetstream.KeyValuePut:
			c.status[e.Key()] = statusRunning(e.Value())
		default:
			delete(c.status, e.Key())
			c.m.mu.Lock()
			if p := c.m.pods[pod]; p != nil && p.protected() && p.targets1(node) {
				c.m.violateLocked("status deleted", pod, node, fmt.Sprintf("status entry %s deleted (revision %d) while its key exists", e.Key(), e.Revision()))
			}
			c.m.mu.Unlock()
		}
		c.mu.Unlock()
	}
}

// parseStatusKey reads <node>.<namespace>.<name> of this run's namespace.
func parseStatusKey(key string) (node, pod string, ok bool) {
	parts := strings.Split(key, ".")
	if len(parts) != 3 || wire.DecodeName(parts[1]) != namespace {
		return "", "", false
	}
	return wire.DecodeName(parts[0]), wire.DecodeName(parts[2]), true
}

// statusRunning: phase Running and its one container running.
func statusRunning(b []byte) bool {
	var p v1.Pod
	if json.Unmarshal(b, &p) != nil {
		return false
	}
	return p.Status.Phase == v1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
}

// converged checks invariant 4 against the truth of the bucket (read by
// the operator after the last fault): each key runs once on each node it
// selects with a Running status, no process of another pod runs, and no
// acknowledged write is lost. It returns what is not so yet.
func (c *checker) converged(ctx context.Context, desired, status jetstream.KeyValue) error {
	keys, err := desired.ListKeysFiltered(ctx, "node.*."+wire.EncodeName(namespace)+".*", "fleet."+wire.EncodeName(namespace)+".*")
	if err != nil {
		return fmt.Errorf("list desired keys: %w", err)
	}
	inBucket := map[string]int{} // pod name → generation stored
	for k := range keys.Keys() {
		dk, err := wire.ParseDesiredKey(k)
		if err != nil {
			return err
		}
		e, err := desired.Get(ctx, k)
		if err != nil {
			return fmt.Errorf("read %s: %w", k, err)
		}
		var meta struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(e.Value(), &meta); err != nil {
			return fmt.Errorf("decode %s: %w", k, err)
		}
		var gen int
		fmt.Sscan(meta.Metadata.Annotations[genAnnotation], &gen)
		inBucket[dk.Name] = gen
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	var problems []string
	for _, name := range c.m.sortedNamesLocked() {
		p := c.m.pods[name]
		gen, there := inBucket[name]
		switch {
		case p.protected() && !there:
			c.m.violateLocked("lost write", name, "", fmt.Sprintf("acknowledged create/update (generation %d) but key %s is not in the bucket", p.ackedGen, p.key))
		case p.protected() && gen < p.ackedGen:
			c.m.violateLocked("lost write", name, "", fmt.Sprintf("generation %d acknowledged but the bucket holds %d", p.ackedGen, gen))
		case !p.deleteAcked.IsZero() && there:
			c.m.violateLocked("lost write", name, "", fmt.Sprintf("delete acknowledged %s but key %s is in the bucket", c.m.since(p.deleteAcked), p.key))
		}
		for _, n := range p.targets {
			s := c.procs[placement{n, name}]
			running := 0
			if s != nil {
				running = len(s.running)
			}
			if there && running != 1 {
				problems = append(problems, fmt.Sprintf("%s on %s: %d processes, want 1", name, n, running))
				continue
			}
			if !there && running != 0 {
				problems = append(problems, fmt.Sprintf("%s on %s: key gone, %d processes left", name, n, running))
				continue
			}
			if there {
				e, err := status.Get(ctx, p.statusKey(n))
				if err != nil {
					problems = append(problems, fmt.Sprintf("%s on %s: status: %v", name, n, err))
				} else if !statusRunning(e.Value()) {
					problems = append(problems, fmt.Sprintf("%s on %s: status not Running", name, n))
				}
			}
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		if len(problems) > 5 {
			problems = append(problems[:5], fmt.Sprintf("and %d more", len(problems)-5))
		}
		return fmt.Errorf("not converged: %s", strings.Join(problems, "; "))
	}
	return nil
}

// countObserved records in the model how many container processes and
// pods on nodes the checker saw over the run.
func (c *checker) countObserved() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	c.m.observedPlacements = len(c.procs)
	c.m.observedPIDs = 0
	for _, s := range c.procs {
		c.m.observedPIDs += len(s.pids)
	}
}

func keys(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}
