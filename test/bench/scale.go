package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/actorlet/actorlet/cri/kuberuntime"
	"github.com/actorlet/actorlet/test/memcri"
)

// scalePoint is one size of the scale section, kept for the plot.
type scalePoint struct {
	n            int
	apply        time.Duration // all desired writes acknowledged
	allRunning   time.Duration // apply start → last pod Running on the bus
	rate         float64       // pods per second to Running
	bytesPerPod  float64       // heap growth per pod
	housekeeping time.Duration // runtime part of a housekeeping pass
	relist       time.Duration // mean PLEG relist duration at steady state
	terminate    time.Duration // purge → no running container
	removed      time.Duration // purge → every status entry deleted
}

// benchScale is section 3: one agent, N pods, an in-memory runtime.
func benchScale(ctx context.Context, e *env) error {
	t := newTable("Control-plane scale, one node, in-memory CRI runtime",
		"pods", "apply (ms)", "to all Running (ms)", "pods/s", "heap/pod (KiB)", "housekeeping (ms)", "relist (ms)", "terminate all (ms)", "statuses removed (ms)")
	var points []scalePoint
	for _, n := range e.scaleSizes {
		p, err := scaleOnce(ctx, e, n)
		if err != nil {
			t.note("N=%d did not complete: %v", n, err)
			break
		}
		points = append(points, p)
		t.add(p.n, p.apply, p.allRunning, fmt.Sprintf("%.0f", p.rate), fmt.Sprintf("%.1f", p.bytesPerPod/1024),
			p.housekeeping, p.relist, p.terminate, p.removed)
	}
	t.note("runtime: the harness's in-memory CRI runtime (test/memcri), not the upstream FakeRuntimeService, whose call log and full scans under one lock would dominate at 10,000+ pods; it has no event stream, so the PLEG relists every 1 s")
	t.note("pods/s: N pods written at once to actorlet_desired, through sources/remote → mux → supervisor → pod actors → runtime → PLEG → status actor → actorlet_status, until the bus shows every pod Running")
	t.note("heap/pod: live heap after GC with N pods Running minus before, over N; the whole process: agent, the in-process nats-server's state for the 2N KV entries, and the harness's watcher")
	t.note("housekeeping: the runtime part of a pass (Manager.GetPods of running pods + GC) at N pods, median of 5; the in-actor part is a walk of the worker map")
	t.note("relist: mean kubelet_pleg_relist_duration_seconds while the N pods run; terminate: all N desired keys purged → no container running in the runtime")
	e.report.emit(t)
	e.scalePoints = points
	return nil
}

func scaleOnce(ctx context.Context, e *env, n int) (scalePoint, error) {
	p := scalePoint{n: n}
	rt := memcri.New()
	node := fmt.Sprintf("bench-scale-%d-%s", n, e.run)
	a, err := startAgent(ctx, agentOpts{name: node, dir: e.dir, natsURL: e.natsURL, runtime: rt, maxPods: n + 10})
	if err != nil {
		return p, err
	}
	defer a.Stop()
	spec := podSpec{image: "bench/sleep:1", command: []string{"sleep", "3600"}, run: e.run}
	values, err := spec.nodePods(node, "p", n)
	if err != nil {
		return p, err
	}
	w, err := e.bus.watchStatus(ctx, statusFilter(node, benchNamespace))
	if err != nil {
		return p, err
	}
	defer w.stop()
	heap0 := liveHeap()

	t0 := time.Now()
	if err := e.bus.put(ctx, values); err != nil {
		return p, err
	}
	p.apply = time.Since(t0)
	if err := waitFor(ctx, 15*time.Minute, fmt.Sprintf("%d pods Running", n), func() bool { return w.count(isRunning) >= n }); err != nil {
		return p, err
	}
	var last time.Time
	for _, s := range w.snapshot() {
		if s.running.After(last) {
			last = s.running
		}
	}
	p.allRunning = last.Sub(t0)
	p.rate = float64(n) / p.allRunning.Seconds()

	p.bytesPerPod = float64(int64(liveHeap())-int64(heap0)) / float64(n)
	p.housekeeping = housekeepingPass(ctx, rt, node)
	sum0, cnt0 := histogram(a.MetricsGatherer(), "kubelet_pleg_relist_duration_seconds")
	time.Sleep(3 * time.Second) // a few relists at steady state (a measurement window, not a wait)
	sum1, cnt1 := histogram(a.MetricsGatherer(), "kubelet_pleg_relist_duration_seconds")
	if cnt1 > cnt0 {
		p.relist = time.Duration((sum1 - sum0) / float64(cnt1-cnt0) * float64(time.Second))
	}

	t1 := time.Now()
	if err := e.bus.purge(ctx, keysOf(values)); err != nil {
		return p, err
	}
	err = waitFor(ctx, 15*time.Minute, "all containers stopped", func() bool { _, running := rt.Counts(); return running == 0 })
	if err != nil {
		return p, err
	}
	p.terminate = time.Since(t1)
	err = waitFor(ctx, 15*time.Minute, "all statuses removed", func() bool { return w.count(func(s *podState) bool { return !s.removed.IsZero() }) >= n })
	p.removed = time.Since(t1)
	return p, err
}

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// housekeepingPass times what the supervisor's housekeeping pass asks of
// the runtime at this size: the running pods of this node, then GC.
func housekeepingPass(ctx context.Context, rt *memcri.Runtime, node string) time.Duration {
	m := kuberuntime.NewManager(rt, kuberuntime.Options{NodeName: node})
	var d durations
	for range 5 {
		t0 := time.Now()
		if _, err := m.GetPods(ctx, false); err != nil {
			return 0
		}
		m.GC()
		d = append(d, time.Since(t0))
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d.percentile(50)
}

// histogram is the sum and count of a histogram the agent exports.
func histogram(g prometheus.Gatherer, name string) (sum float64, count uint64) {
	mfs, err := g.Gather()
	if err != nil {
		return 0, 0
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if h := m.GetHistogram(); h != nil {
				sum += h.GetSampleSum()
				count += h.GetSampleCount()
			}
		}
	}
	return sum, count
}
