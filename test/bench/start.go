package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri/kuberuntime"
	"github.com/actorlet/actorlet/node/agent"
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
	// After the sandboxes (defers run last first): the raw pods' cgroups of
	// a round that failed midway.
	defer func() { _ = removeCgroupTree(rawPodCgroupRoot(e.run)) }()
	defer rt.cleanUntilGone()
	if err := rt.ensureImage(ctx); err != nil {
		return err
	}
	node := "bench-start-" + e.run
	a, err := startAgent(ctx, agentOpts{name: node, dir: e.dir, natsURL: e.natsURL, runtime: rt.timed(), maxPods: 1000, callLimit: e.callLimit, maxParallel: e.maxParallel})
	if err != nil {
		return err
	}
	defer a.Stop()
	// The container ends at SIGTERM (a bare `sleep` as PID 1 ignores it and
	// would make every teardown wait out the grace period, which raw
	// StopPodSandbox does not): teardown then compares the work, not a
	// timeout.
	spec := podSpec{image: rt.image, command: []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"}, run: e.run}

	t := newTable("Pod start latency and teardown on "+rt.kind+" (ms)",
		"N", "actorlet p50", "actorlet total", "best raw conc.", "raw p50", "raw total", "ratio total",
		"raw total all at once", "actorlet teardown", "raw teardown", "ratio teardown",
		"actorlet CRI calls/pod start", "actorlet CRI calls/pod teardown",
		"raw total, the agent's pod at its bound", "ratio to it")
	calls := newTable("CRI calls per pod the agent made, by method (the better round)", "N", "phase", "calls/pod", "by method")
	limits := newTable("The agent's runtime call limit during the start (the better round; actorlet_runtime_call_limit every 250 ms)", "N", "mode", "limit over time")
	sweep := newTable("Raw CRI: all N pods Running at each concurrency (ms, total)", "N", "conc.", "raw total", "raw teardown", "start calls: mean ms · mean in flight (peak)", "CPU during the start")
	timed := newTable("The agent's start calls in the runtime, each round", "N", "round", "total", "start calls: mean ms · mean in flight (peak)", "CPU during the start")
	for _, n := range e.startSizes {
		// The agent runs once before and once after the raw sweep and the
		// better round counts, as the raw side counts its best round: on a
		// shared machine the load drifts over the minutes of a sweep, and
		// a single agent round first would carry all of that drift.
		agentRun, err := startThroughAgent(ctx, e, a, rt, spec, node, n, "a")
		if err != nil {
			return err
		}
		// Raw CRI at the agent's bound with the agent's own pod
		// configuration, next to the agent's round: the floor for the same
		// pod.
		sameBound, err := rawRound(ctx, e, rt, spec, n, e.maxParallel, true)
		if err != nil {
			return err
		}
		sweep.add(n, concLabel(e.maxParallel, n)+", the agent's pod", sameBound.start.max(), sameBound.teardown, sameBound.calls, sameBound.cpu)
		// Raw CRI at fixed concurrencies, and all at once: the best is the
		// floor the agent is held to.
		var best, allAtOnce rawRun
		for _, c := range concurrencies(n) {
			r, err := rawRound(ctx, e, rt, spec, n, c, false)
			if err != nil {
				return err
			}
			sweep.add(n, concLabel(c, n), r.start.max(), r.teardown, r.calls, r.cpu)
			if c >= n {
				allAtOnce = r
			}
			if best.start == nil || r.start.max() < best.start.max() {
				best = r
			}
		}
		again, err := startThroughAgent(ctx, e, a, rt, spec, node, n, "b")
		if err != nil {
			return err
		}
		timed.add(n, "before the sweep", agentRun.start.max(), agentRun.callTimes, agentRun.cpu)
		timed.add(n, "after the sweep", again.start.max(), again.callTimes, again.cpu)
		if again.start.max() < agentRun.start.max() {
			agentRun = again
		}
		t.add(n, agentRun.start.percentile(50), agentRun.start.max(), concLabel(best.conc, n),
			best.start.percentile(50), best.start.max(), ratio(agentRun.start.max(), best.start.max()),
			allAtOnce.start.max(), agentRun.teardown, best.teardown, ratio(agentRun.teardown, best.teardown),
			perPod(agentRun.startCalls, n), perPod(agentRun.teardownCalls, n),
			sameBound.start.max(), ratio(agentRun.start.max(), sameBound.start.max()))
		limits.add(n, e.callLimit, agentRun.limits)
		calls.add(n, "start", perPod(agentRun.startCalls, n), byMethod(agentRun.startCalls, n))
		calls.add(n, "teardown", perPod(agentRun.teardownCalls, n), byMethod(agentRun.teardownCalls, n))
	}
	t.note("runtime: %s; one container per pod running `sleep 3600` under a shell that exits at SIGTERM, image %s", rt.kind, rt.image)
	t.note("actorlet: all N pods written to KV %s at once (32 concurrent writers), --max-parallel-runtime-calls %d, --runtime-call-limit %s; latency = first status in KV actorlet_status with phase Running and the container running, minus the time the apply began; the better of two rounds, one before and one after the raw sweep (with its teardown)", "actorlet_desired", e.maxParallel, e.callLimit)
	t.note("raw CRI: RunPodSandbox + CreateContainer + StartContainer per pod at each fixed concurrency of the sweep below, and all N at once; the best total is the floor; latency = StartContainer returned, minus the start")
	t.note("teardown: actorlet = all N desired keys deleted → every sandbox of the node removed from the runtime; raw = StopPodSandbox + RemovePodSandbox of N sandboxes at the best start concurrency")
	t.note("raw total, the agent's pod at its bound: raw CRI at the agent's --max-parallel-runtime-calls with the sandbox and container configuration the agent sent for its first pod (its pod cgroup's depth, its mounts, labels and annotations), made the raw pod's; run right after the first agent round, before the sweep")
	t.note("the agent learns a container runs from the PLEG (evented on containerd), the raw client from StartContainer's reply")
	t.note("CRI calls/pod: unary CRI calls of the agent's runtime client (actorlet_cri_calls_total) from the apply to the last pod Running (start) and from the delete to the last sandbox removed (teardown), over N; PLEG relists in that window count too")
	e.report.emit(t)
	e.report.emit(calls)
	e.report.emit(limits)
	sweep.note("start calls: RunPodSandbox, CreateContainer and StartContainer as the client saw them (not a wait for a slot): the mean time of a call, and the mean calls in flight (their summed time over the start's length) with the peak; CPU: this process's CPU time (the bench's client, and the in-process agent and NATS server), the runtime process's (containerd; not its shims) and the machine's busy CPU time of its whole capacity (nproc × the start's length)")
	e.report.emit(sweep)
	timed.note("the same figures for the agent's calls from the apply to the last pod Running, measured below the agent's runtime call limit")
	e.report.emit(timed)
	return nil
}

// traceLimit samples the agent's actorlet_runtime_call_limit every period
// until the returned stop, which gives the samples as "l1 l2 ...", runs of
// one value folded as "l×k".
func traceLimit(a *agent.Agent, period time.Duration) (stop func() string) {
	done := make(chan struct{})
	out := make(chan string, 1)
	go func() {
		var vals []int
		sample := func() {
			fams, err := a.MetricsGatherer().Gather()
			if err != nil {
				return
			}
			for _, f := range fams {
				if f.GetName() == "actorlet_runtime_call_limit" && len(f.GetMetric()) == 1 {
					vals = append(vals, int(f.GetMetric()[0].GetGauge().GetValue()))
				}
			}
		}
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			sample()
			select {
			case <-done:
				out <- foldRuns(vals)
				return
			case <-tick.C:
			}
		}
	}()
	return func() string { close(done); return <-out }
}

// foldRuns writes vals with runs of one value as "v×k".
func foldRuns(vals []int) string {
	var parts []string
	for i := 0; i < len(vals); {
		j := i
		for j < len(vals) && vals[j] == vals[i] {
			j++
		}
		if j-i > 1 {
			parts = append(parts, fmt.Sprintf("%d×%d", vals[i], j-i))
		} else {
			parts = append(parts, fmt.Sprint(vals[i]))
		}
		i = j
	}
	return strings.Join(parts, " ")
}

// callDelta is after - before, by method.
func callDelta(before, after map[string]uint64) map[string]uint64 {
	out := map[string]uint64{}
	for m, n := range after {
		if d := n - before[m]; d > 0 {
			out[m] = d
		}
	}
	return out
}

// perPod is the total of calls over n pods, to one decimal.
func perPod(calls map[string]uint64, n int) string {
	var total uint64
	for _, c := range calls {
		total += c
	}
	return fmt.Sprintf("%.1f", float64(total)/float64(n))
}

// byMethod lists calls per pod by method, most first.
func byMethod(calls map[string]uint64, n int) string {
	methods := make([]string, 0, len(calls))
	for m := range calls {
		methods = append(methods, m)
	}
	sort.Slice(methods, func(i, j int) bool {
		if calls[methods[i]] != calls[methods[j]] {
			return calls[methods[i]] > calls[methods[j]]
		}
		return methods[i] < methods[j]
	})
	parts := make([]string, len(methods))
	for i, m := range methods {
		parts[i] = fmt.Sprintf("%s %.1f", m, float64(calls[m])/float64(n))
	}
	return strings.Join(parts, ", ")
}

// rawRun is one raw CRI round: N pods started at concurrency conc, then
// torn down at the same concurrency.
type rawRun struct {
	conc     int
	start    durations
	teardown time.Duration
	calls    string // the start calls' mean time and mean in flight (callClock.summary)
	cpu      string // where the CPU went during the start (cpuWindow)
}

// concurrencies is the sweep for n pods: fixed bounds below n, then n (all
// at once).
func concurrencies(n int) []int {
	var out []int
	for _, c := range []int{2, 4, 8, 16} {
		if c < n {
			out = append(out, c)
		}
	}
	return append(out, n)
}

func concLabel(c, n int) string {
	if c >= n {
		return "all"
	}
	return fmt.Sprint(c)
}

// rawRound starts n pods with raw CRI calls, conc at a time, and tears
// them down; asAgent replays the agent's pod configuration instead of a
// minimal one (rawStart).
func rawRound(ctx context.Context, e *env, rt *realRuntime, spec podSpec, n, conc int, asAgent bool) (rawRun, error) {
	r := rawRun{conc: conc}
	if asAgent {
		// The raw pods' cgroups, made by the runtime under a root of the
		// run's own, go once their sandboxes are gone.
		defer func() {
			if err := removeCgroupTree(rawPodCgroupRoot(e.run)); err != nil {
				fmt.Fprintf(os.Stderr, "warning: raw pods' cgroups left: %v\n", err)
			}
		}()
	}
	rt.clock.reset()
	cpu := startCPUWindow(rt.pid)
	lat, err := startRaw(ctx, e, rt, spec, n, conc, asAgent)
	if err != nil {
		return r, err
	}
	r.start, r.calls, r.cpu = lat, rt.clock.summary(), cpu.String()
	t0 := time.Now()
	if err := rt.teardown(ctx, conc); err != nil {
		return r, err
	}
	r.teardown = time.Since(t0)
	if _, err := rt.cleanNamespace(ctx); err != nil {
		return r, err
	}
	return r, nil
}

// agentRun is one round through the agent.
type agentRun struct {
	start         durations
	teardown      time.Duration
	limits        string            // the call limit every 250 ms from the apply to all Running
	startCalls    map[string]uint64 // CRI calls from the apply to all Running
	teardownCalls map[string]uint64 // CRI calls from the delete to all removed
	callTimes     string            // the start calls' mean time and mean in flight (callClock.summary)
	cpu           string            // where the CPU went during the start (cpuWindow)
}

func startThroughAgent(ctx context.Context, e *env, a *agent.Agent, rt *realRuntime, spec podSpec, node string, n int, round string) (agentRun, error) {
	var run agentRun
	prefix := fmt.Sprintf("s%d%s", n, round)
	values, err := spec.nodePods(node, prefix, n)
	if err != nil {
		return run, err
	}
	w, err := e.bus.watchStatus(ctx, statusFilter(node, benchNamespace))
	if err != nil {
		return run, err
	}
	defer w.stop()
	calls0 := rt.client.CallCounts()
	rt.clock.reset()
	cpu := startCPUWindow(rt.pid)
	t0 := time.Now()
	stopTrace := traceLimit(a, 250*time.Millisecond)
	if err := e.bus.put(ctx, values); err != nil {
		stopTrace()
		return run, err
	}
	err = waitFor(ctx, 10*time.Minute, fmt.Sprintf("%d pods Running", n), func() bool { return w.count(isRunning) >= n })
	run.limits = stopTrace()
	if err != nil {
		return run, err
	}
	run.callTimes, run.cpu = rt.clock.summary(), cpu.String()
	calls1 := rt.client.CallCounts()
	run.startCalls = callDelta(calls0, calls1)
	var lat durations
	for _, p := range w.snapshot() {
		if !p.running.IsZero() {
			lat = append(lat, p.running.Sub(t0))
		}
	}
	run.start = lat
	// Remove them through the agent and wait until every sandbox of the
	// node is gone from the runtime: the teardown figure, and an idle
	// runtime for the raw rounds.
	t1 := time.Now()
	if err := e.bus.purge(ctx, keysOf(values)); err != nil {
		return run, err
	}
	polls := uint64(0) // the bench's own ListPodSandbox calls, not the agent's
	err = waitFor(ctx, 5*time.Minute, "the agent to remove its pods' sandboxes", func() bool {
		polls++
		sbs, err := rt.client.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
			LabelSelector: map[string]string{kuberuntime.LabelNode: node},
		})
		return err == nil && len(sbs) == 0
	})
	run.teardown = time.Since(t1)
	run.teardownCalls = callDelta(calls1, rt.client.CallCounts())
	run.teardownCalls["ListPodSandbox"] -= min(polls, run.teardownCalls["ListPodSandbox"])
	if run.teardownCalls["ListPodSandbox"] == 0 {
		delete(run.teardownCalls, "ListPodSandbox")
	}
	return run, err
}

func startRaw(ctx context.Context, e *env, rt *realRuntime, spec podSpec, n, conc int, asAgent bool) (durations, error) {
	var (
		mu    sync.Mutex
		lat   durations
		first error
		wg    sync.WaitGroup
		sem   = make(chan struct{}, conc)
	)
	logRoot := filepath.Join(e.dir, "raw-logs")
	t0 := time.Now()
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := rt.rawStart(ctx, logRoot, e.run, fmt.Sprintf("raw%d-%d", n, i), spec.command, asAgent)
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
