package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/actorlet/actorlet/cmd/actorlet/agent"
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
	heap0 := liveHeap()
	prefix := fmt.Sprintf("bench-fleet-%s-%d-", e.run, k) // node names, and so status keys, start with it
	agents := make([]*agent.Agent, k)
	runtimes := make([]*memcri.Runtime, k)
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	t0 := time.Now()
	defer func() { stopAll(agents) }()
	err := parallel(ctx, 8, idx, func(ctx context.Context, i int) error {
		runtimes[i] = memcri.New()
		a, err := startAgent(ctx, agentOpts{name: fmt.Sprintf("%s%d", prefix, i), dir: e.dir,
			natsURL: e.natsURL, runtime: runtimes[i], labels: labels, heartbeat: 10 * time.Second})
		agents[i] = a
		return err
	})
	if err != nil {
		return err
	}
	startup := time.Since(t0)
	heapPerAgent := float64(int64(liveHeap())-int64(heap0)) / float64(k) / (1 << 20)

	cpu, err := startCPU("self")
	if err != nil {
		return err
	}
	select {
	case <-time.After(e.fleetWindow()):
	case <-ctx.Done():
		return ctx.Err()
	}
	idle, err := cpu.percent()
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
	total := k * fleetPodsPerNode
	v0 := varz(e.nats)
	t1 := time.Now()
	if err := e.bus.put(ctx, values); err != nil {
		return err
	}
	err = waitFor(ctx, 10*time.Minute, fmt.Sprintf("%d fleet pods Running", total), func() bool { return w.countKeys(prefix, isRunning) >= total })
	if err != nil {
		return err
	}
	v1 := varz(e.nats)
	var lat durations
	for key, p := range w.snapshot() {
		if strings.HasPrefix(key, prefix) && !p.running.IsZero() {
			lat = append(lat, p.running.Sub(t1))
		}
	}
	msgs := float64(v1.InMsgs+v1.OutMsgs-v0.InMsgs-v0.OutMsgs) / float64(total)
	kib := float64(v1.InBytes+v1.OutBytes-v0.InBytes-v0.OutBytes) / float64(total) / 1024
	t.add(k, startup, lat.max(), lat.percentile(50), lat.percentile(99), fmt.Sprintf("%.0f", msgs), fmt.Sprintf("%.1f", kib),
		fmt.Sprintf("%.3f", idle/float64(k)), fmt.Sprintf("%.1f", heapPerAgent))

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
