package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri/kuberuntime"
)

// benchStart is section 1: pod start latency on a real runtime, through the
// agent (desired KV → Running in the status KV) and with raw CRI calls.
func benchStart(ctx context.Context, e *env) error {
	rt, err := openRuntime(ctx, e.runtime, e.dir)
	if err != nil {
		return err
	}
	defer rt.close()
	if _, err := rt.cleanNamespace(ctx); err != nil {
		return err
	}
	defer rt.cleanUntilGone()
	if err := rt.ensureImage(ctx); err != nil {
		return err
	}
	node := "bench-start-" + e.run
	a, err := startAgent(ctx, agentOpts{name: node, dir: e.dir, natsURL: e.natsURL, runtime: rt.client, maxPods: 1000})
	if err != nil {
		return err
	}
	defer a.Stop()
	spec := podSpec{image: rt.image, command: []string{"sleep", "3600"}, run: e.run}

	t := newTable("Pod start latency on "+rt.kind+" (ms)",
		"N", "actorlet p50", "actorlet p99", "actorlet total", "raw CRI p50", "raw CRI p99", "raw CRI total", "ratio p50", "ratio p99", "ratio total")
	for _, n := range e.startSizes {
		agentLat, err := startThroughAgent(ctx, e, rt, spec, node, n)
		if err != nil {
			return err
		}
		rawLat, err := startRaw(ctx, e, rt, spec, n)
		if err != nil {
			return err
		}
		if _, err := rt.cleanNamespace(ctx); err != nil {
			return err
		}
		t.add(n, agentLat.percentile(50), agentLat.percentile(99), agentLat.max(),
			rawLat.percentile(50), rawLat.percentile(99), rawLat.max(),
			ratio(agentLat.percentile(50), rawLat.percentile(50)), ratio(agentLat.percentile(99), rawLat.percentile(99)),
			ratio(agentLat.max(), rawLat.max()))
	}
	t.note("runtime: %s; one container per pod running `sleep 3600`, image %s", rt.kind, rt.image)
	t.note("actorlet: all N pods written to KV %s at once (32 concurrent writers); latency = first status in KV actorlet_status with phase Running and the container running, minus the time the apply began", "actorlet_desired")
	t.note("raw CRI: RunPodSandbox + CreateContainer + StartContainer per pod, all N pods concurrently (the agent's effective concurrency: every pod actor runs its sync in its own goroutine, with no limit); latency = StartContainer returned, minus the start")
	t.note("PLEG relist period 1 s (the default); the agent learns a container runs from the PLEG, the raw client from StartContainer's reply")
	e.report.emit(t)
	return nil
}

func startThroughAgent(ctx context.Context, e *env, rt *realRuntime, spec podSpec, node string, n int) (durations, error) {
	prefix := fmt.Sprintf("s%d", n)
	values, err := spec.nodePods(node, prefix, n)
	if err != nil {
		return nil, err
	}
	w, err := e.bus.watchStatus(ctx, statusFilter(node, benchNamespace))
	if err != nil {
		return nil, err
	}
	defer w.stop()
	t0 := time.Now()
	if err := e.bus.put(ctx, values); err != nil {
		return nil, err
	}
	if err := waitFor(ctx, 10*time.Minute, fmt.Sprintf("%d pods Running", n), func() bool { return w.count(isRunning) >= n }); err != nil {
		return nil, err
	}
	var lat durations
	for _, p := range w.snapshot() {
		if !p.running.IsZero() {
			lat = append(lat, p.running.Sub(t0))
		}
	}
	// Remove them through the agent, then wait until it has stopped every
	// container, so the raw run starts on an idle runtime.
	if err := e.bus.purge(ctx, keysOf(values)); err != nil {
		return nil, err
	}
	err = waitFor(ctx, 5*time.Minute, "the agent to stop its pods", func() bool {
		cs, err := rt.client.ListContainers(ctx, &runtimeapi.ContainerFilter{
			State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
			LabelSelector: map[string]string{kuberuntime.LabelNode: node},
		})
		return err == nil && len(cs) == 0
	})
	return lat, err
}

func startRaw(ctx context.Context, e *env, rt *realRuntime, spec podSpec, n int) (durations, error) {
	var (
		mu    sync.Mutex
		lat   durations
		first error
		wg    sync.WaitGroup
	)
	logRoot := filepath.Join(e.dir, "raw-logs")
	t0 := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := rt.rawStart(ctx, logRoot, e.run, fmt.Sprintf("raw%d-%d", n, i), spec.command)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
			lat = append(lat, time.Since(t0))
		}()
	}
	wg.Wait()
	return lat, first
}
