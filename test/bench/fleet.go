package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/actorlet/actorlet/node/agent"
	"github.com/actorlet/actorlet/test/memcri"
)

// fleetPodsPerNode is P, the fleet pods every node runs.
const fleetPodsPerNode = 5

// benchFleet is section 4: K agents in this process on one nats-server,
// each with its own in-memory runtime, and one fleet-wide apply.
func benchFleet(ctx context.Context, e *env) error {
	t := newTable(fmt.Sprintf("Fleet: K agents, one fleet-wide apply of %d pods per node", fleetPodsPerNode),
		"agents", "start agents (ms)", "apply → all Running (ms)", "p50 pod (ms)", "p99 pod (ms)", "NATS msgs/pod", "NATS KiB/pod", "idle CPU/agent (% core)", "heap/agent (MiB)")
	for _, k := range e.fleetSizes {
		if err := fleetOnce(ctx, e, k, t); err != nil {
			t.note("K=%d did not complete: %v", k, err)
			break
		}
	}
	t.note("every agent: its own node name, root dir and in-memory runtime, relist 1 s, heartbeat 10 s, all joined to one in-process nats-server (JetStream, file store)")
	t.note("apply: %d keys fleet.<ns>.<name> with a nodeSelector every node matches; latency to each pod's first Running in actorlet_status on each node", fleetPodsPerNode)
	t.note("NATS msgs and bytes: the server's varz (in+out) from just before the apply until every pod runs, over K×P pods; it counts every subscriber's copy, so the fan-out of the fleet keys to K watchers is in it")
	t.note("idle CPU: this process (the agents and the nats-server) over %s with no pods, heartbeats only, divided by K", e.fleetWindow())
	e.report.emit(t)
	return nil
}

func (e *env) fleetWindow() time.Duration { return e.window / 6 }

func fleetOnce(ctx context.Context, e *env, k int, t *table) error {
	labels := map[string]string{"actorlet.io/bench-fleet": fmt.Sprintf("%s-%d", e.run, k)}
	prefix := fmt.Sprintf("bench-fleet-%s-%d-", e.run, k) // node names, and so status keys, start with it
	runtimes := make([]*memcri.Runtime, k)
	f, err := startFleet(ctx, e, k, func(_ context.Context, i int) (agentOpts, error) {
		runtimes[i] = memcri.New()
		return agentOpts{name: fmt.Sprintf("%s%d", prefix, i), dir: e.dir,
			natsURL: e.natsURL, runtime: runtimes[i], labels: labels, heartbeat: 10 * time.Second}, nil
	})
	defer f.stop()
	if err != nil {
		return err
	}
	spec := podSpec{image: "bench/sleep:1", command: []string{"sleep", "3600"}, run: e.run}
	values, err := spec.fleetPods(fmt.Sprintf("f%d", k), fleetPodsPerNode, labels)
	if err != nil {
		return err
	}
	w, err := e.bus.watchStatus(ctx, statusFilter("*", benchNamespace))
	if err != nil {
		return err
	}
	defer w.stop()
	counters := func() (int64, int64) {
		v := varz(e.nats)
		return v.InMsgs + v.OutMsgs, v.InBytes + v.OutBytes
	}
	r, err := applyFleet(ctx, w, prefix, k*fleetPodsPerNode, 10*time.Minute, counters, func(ctx context.Context) error {
		return e.bus.put(ctx, values)
	})
	if err != nil {
		return err
	}
	t.add(k, f.startup, r.lat.max(), r.lat.percentile(50), r.lat.percentile(99), fmt.Sprintf("%.0f", r.msgsPerPod()), fmt.Sprintf("%.1f", r.kibPerPod()),
		fmt.Sprintf("%.3f", f.idlePerAgent), fmt.Sprintf("%.1f", f.heapPerAgent))

	// Remove the fleet pods and wait until every node stopped them.
	if err := e.bus.purge(ctx, keysOf(values)); err != nil {
		return err
	}
	return waitFor(ctx, 5*time.Minute, "fleet pods stopped", func() bool {
		for _, r := range runtimes {
			if _, running := r.Counts(); running > 0 {
				return false
			}
		}
		return true
	})
}

// startedFleet is K agents of one section, started and measured idle.
type startedFleet struct {
	agents       []*agent.Agent
	heap0        uint64        // live heap before the agents started
	startup      time.Duration // all K started
	heapPerAgent float64       // MiB of live heap added per agent
	idlePerAgent float64       // % of a core per agent over fleetWindow, no pods
}

// startFleet starts k agents (8 at a time) with the options opts gives
// each, then measures the process's idle CPU over e.fleetWindow(). The
// fleet it returns, even with an error, must be stopped.
func startFleet(ctx context.Context, e *env, k int, opts func(context.Context, int) (agentOpts, error)) (*startedFleet, error) {
	f := &startedFleet{agents: make([]*agent.Agent, k)}
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	f.heap0 = liveHeap()
	t0 := time.Now()
	err := parallel(ctx, 8, idx, func(ctx context.Context, i int) error {
		o, err := opts(ctx, i)
		if err != nil {
			return err
		}
		a, err := startAgent(ctx, o)
		f.agents[i] = a
		return err
	})
	if err != nil {
		return f, err
	}
	f.startup = time.Since(t0)
	f.heapPerAgent = f.heapNow()
	f.idlePerAgent, err = f.idleCPU(ctx, e.fleetWindow())
	return f, err
}

// heapNow is the live heap added since the agents started, per agent (MiB).
func (f *startedFleet) heapNow() float64 {
	return float64(int64(liveHeap())-int64(f.heap0)) / float64(len(f.agents)) / (1 << 20)
}

// idleCPU is this process's CPU over window, per agent (% of a core).
func (f *startedFleet) idleCPU(ctx context.Context, window time.Duration) (float64, error) {
	cpu, err := startCPU("self")
	if err != nil {
		return 0, err
	}
	select {
	case <-time.After(window):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	idle, err := cpu.percent()
	return idle / float64(len(f.agents)), err
}

func (f *startedFleet) stop() { stopAll(f.agents) }

// fleetApply is what one fleet-wide apply measured.
type fleetApply struct {
	took        time.Duration // apply → every pod Running
	lat         durations     // apply → each pod's first Running
	pods        int
	msgs, bytes int64 // NATS counters over the apply
}

func (r fleetApply) msgsPerPod() float64 { return float64(r.msgs) / float64(r.pods) }
func (r fleetApply) kibPerPod() float64  { return float64(r.bytes) / float64(r.pods) / 1024 }

// applyFleet runs write (the apply) and waits until w has seen total pods
// of nodes named prefix… Running; counters are the bus's message and byte
// counters, read before and after.
func applyFleet(ctx context.Context, w *statusWatch, prefix string, total int, timeout time.Duration,
	counters func() (msgs, bytes int64), write func(context.Context) error) (fleetApply, error) {
	r := fleetApply{pods: total}
	m0, b0 := counters()
	t1 := time.Now()
	if err := write(ctx); err != nil {
		return r, err
	}
	err := waitFor(ctx, timeout, fmt.Sprintf("%d pods Running", total), func() bool { return w.countKeys(prefix, isRunning) >= total })
	if err != nil {
		return r, err
	}
	r.took = time.Since(t1)
	m1, b1 := counters()
	r.msgs, r.bytes = m1-m0, b1-b0
	for key, ps := range w.snapshot() {
		if strings.HasPrefix(key, prefix) && !ps.running.IsZero() {
			r.lat = append(r.lat, ps.running.Sub(t1))
		}
	}
	return r, nil
}

func stopAll(agents []*agent.Agent) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for _, a := range agents {
		if a == nil {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			a.Stop()
		}()
	}
	wg.Wait()
}

func varz(s *server.Server) server.Varz {
	v, err := s.Varz(nil)
	if err != nil || v == nil {
		return server.Varz{}
	}
	return *v
}
