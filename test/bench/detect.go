package main

import (
	"context"
	"fmt"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/asynkron/protoactor-go/actor"
	"strings"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/cri/kuberuntime"
)

// crashPods is how many pods of the detect section die once; their exits
// are spread over a second (sleep 2 s + i/crashPods s), so they fall at
// different phases of the relist period and the figures are a
// distribution, not one sample.
const crashPods = 10

// benchDetect is section 2: how soon a container's death is seen and the
// container restarted, per runtime and relist period, and what relisting
// costs in CPU with idle pods.
func benchDetect(ctx context.Context, e *env) error {
	idle := 30
	if e.quick {
		idle = 10
	}
	t := newTable("Failure detection and restart (ms), relisting CPU",
		"runtime", "PLEG", "relist period", "in actor p50", "in actor max", "on bus p50", "on bus max", "restarted p50", "restarted max", fmt.Sprintf("agent CPU, %d idle pods (%% core)", idle), "runtime CPU (% core)")
	var kinds []string
	switch e.runtime {
	case "auto":
		kinds = []string{"containerd", "process"}
	default:
		kinds = []string{e.runtime}
	}
	for _, kind := range kinds {
		rt, err := openRuntime(ctx, kind, e.dir)
		if err != nil {
			t.note("%s: not measured: %v", kind, err)
			continue
		}
		// With the runtime's event source (whatever the client finds:
		// CRI GetContainerEvents or containerd's event service), then
		// relisting only, at two periods, for the comparison.
		for _, m := range []struct {
			relistOnly bool
			period     time.Duration
		}{{false, time.Second}, {true, time.Second}, {true, 100 * time.Millisecond}} {
			if err := detectOnce(ctx, e, rt, m.period, m.relistOnly, idle, t); err != nil {
				rt.close()
				return err
			}
		}
		rt.close()
	}
	t.note("%d pods run `sh -c 'sleep 2.N; exit 3'` with N spreading their exits over one second (restartPolicy Always): the first exit is restarted at once (no back-off yet)", crashPods)
	t.note("in actor: the container's finishedAt from CRI ContainerStatus (ns) → the sync loop receiving its ContainerDied (recorded by a receiver middleware; the pod actor is one in-memory send further): the detection itself")
	t.note("on bus: finishedAt → the first status in KV actorlet_status showing the death (state terminated or restartCount ≥ 1): detection plus the restart sync (the first restart follows at once), the status actor and NATS")
	t.note("restarted: finishedAt → the first status with restartCount ≥ 1 and the container running; both include the harness's KV watch delivery")
	t.note("CPU: %s of process CPU time (/proc/<pid>/stat utime+stime) per wall second, with %d `sleep 3600` pods running and nothing changing; agent = this process (agent and nats-server, and the process runtime when it is the runtime); runtime = the containerd process", e.fleetWindow(), idle)
	t.note("PLEG: the mode the agent ran in, read from its CRI client (cri.Client.EventSource) once its pods ran: \"events: CRI GetContainerEvents\" (the process runtime, containerd ≥ 1.7), \"events: containerd event service\" (containerd 1.6: task exit/start through containerd's own events API), \"relisting\"; in events mode the relist period is only the safety net")
	t.note("relisting (forced): the harness hands the agent its CRI client with GetContainerEvents answering Unimplemented, so the PLEG relists at the period: the comparison without events on the same runtime")
	e.report.emit(t)
	return nil
}

func detectOnce(ctx context.Context, e *env, rt *realRuntime, period time.Duration, relistOnly bool, idle int, t *table) error {
	if err := rt.ensureImage(ctx); err != nil {
		return err
	}
	if _, err := rt.cleanNamespace(ctx); err != nil {
		return err
	}
	defer rt.cleanUntilGone()
	kindTok := strings.Fields(rt.kind)[0]
	node := fmt.Sprintf("bench-detect-%s-%d-%t-%s", kindTok, period.Milliseconds(), relistOnly, e.run)
	died := newDeathLog()
	var runtime cri.Runtime = rt.client
	if relistOnly {
		runtime = noEvents{rt.client}
	}
	a, err := startAgent(ctx, agentOpts{name: node, dir: e.dir, natsURL: e.natsURL, runtime: runtime, relist: period,
		middleware: []actor.ReceiverMiddleware{died.middleware}})
	if err != nil {
		return err
	}
	defer a.Stop()
	w, err := e.bus.watchStatus(ctx, statusFilter(node, benchNamespace))
	if err != nil {
		return err
	}
	defer w.stop()

	// Idle pods, then the CPU window.
	sleepers, err := podSpec{image: rt.image, command: []string{"sleep", "3600"}, run: e.run}.nodePods(node, "idle", idle)
	if err != nil {
		return err
	}
	if err := e.bus.put(ctx, sleepers); err != nil {
		return err
	}
	if err := waitFor(ctx, 5*time.Minute, "idle pods Running", func() bool { return w.count(isRunning) >= idle }); err != nil {
		return err
	}
	self, err := startCPU("self")
	if err != nil {
		return err
	}
	var rtCPU *cpuMeter
	if rt.pid != "self" && rt.pid != "" {
		rtCPU, _ = startCPU(rt.pid)
	}
	select {
	case <-time.After(e.fleetWindow()):
	case <-ctx.Done():
		return ctx.Err()
	}
	agentPct, _ := self.percent()
	rtPct := "in agent"
	if rtCPU != nil {
		if p, err := rtCPU.percent(); err == nil {
			rtPct = fmt.Sprintf("%.2f", p)
		}
	}

	// Crashing pods.
	crashers := map[string][]byte{}
	for i := range crashPods {
		script := fmt.Sprintf("sleep %.3f; exit 3", 2+float64(i)/crashPods)
		one, err := podSpec{image: rt.image, command: []string{"sh", "-c", script}, run: e.run}.nodePods(node, fmt.Sprintf("crash%d", i), 1)
		if err != nil {
			return err
		}
		for k, v := range one {
			crashers[k] = v
		}
	}
	if err := e.bus.put(ctx, crashers); err != nil {
		return err
	}
	restarted := func(p *podState) bool { return !p.restarted.IsZero() }
	if err := waitFor(ctx, 3*time.Minute, "crashing pods restarted", func() bool { return w.count(restarted) >= crashPods }); err != nil {
		return err
	}
	var detect, inActor, restart durations
	states := w.snapshot()
	for key := range crashers {
		name := key[strings.LastIndexByte(key, '.')+1:]
		p, ok := states[wire.StatusKey(node, benchNamespace, name)]
		if !ok {
			continue
		}
		fin, id, err := firstFinishedAt(ctx, rt, node, name)
		if err != nil {
			return err
		}
		if at, ok := died.at(id); ok {
			inActor = append(inActor, at.Sub(fin))
		}
		detect = append(detect, p.died.Sub(fin))
		restart = append(restart, p.restarted.Sub(fin))
	}
	mode := plegMode(rt.client.EventSource())
	if relistOnly {
		mode = "relisting (forced)"
	}
	t.add(rt.kind, mode, period.String(), inActor.percentile(50), inActor.max(), detect.percentile(50), detect.max(), restart.percentile(50), restart.max(), fmt.Sprintf("%.2f", agentPct), rtPct)

	all := append(keysOf(sleepers), keysOf(crashers)...)
	if err := e.bus.purge(ctx, all); err != nil {
		return err
	}
	return waitFor(ctx, 5*time.Minute, "the agent to stop its pods", func() bool {
		cs, err := rt.client.ListContainers(ctx, &runtimeapi.ContainerFilter{
			State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
			LabelSelector: map[string]string{kuberuntime.LabelNode: node},
		})
		return err == nil && len(cs) == 0
	})
}

// plegMode names the agent's PLEG mode from its CRI client's event source.
func plegMode(source string) string {
	switch source {
	case "cri":
		return "events: CRI GetContainerEvents"
	case "containerd":
		return "events: containerd event service"
	case "none":
		return "relisting"
	}
	return "unknown (" + source + ")"
}

// noEvents is a runtime without container events: GetContainerEvents
// answers Unimplemented, as containerd 1.6 does over CRI without its event
// service, so the agent's PLEG relists.
type noEvents struct{ cri.Runtime }

func (noEvents) GetContainerEvents(context.Context, chan *runtimeapi.ContainerEventResponse, func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	return status.Error(codes.Unimplemented, "container events disabled by the benchmark (relisting only)")
}

// firstFinishedAt is when the first instance (attempt 0) of a pod's
// container exited, as the runtime recorded it.
func firstFinishedAt(ctx context.Context, rt *realRuntime, node, pod string) (time.Time, string, error) {
	cs, err := rt.client.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{
		kuberuntime.LabelNode: node, kuberuntime.LabelPodName: pod, kuberuntime.LabelPodNamespace: benchNamespace,
	}})
	if err != nil {
		return time.Time{}, "", fmt.Errorf("list containers of %s: %w", pod, err)
	}
	for _, c := range cs {
		if c.GetMetadata().GetAttempt() != 0 {
			continue
		}
		st, err := rt.client.ContainerStatus(ctx, c.Id, false)
		if err != nil {
			return time.Time{}, "", fmt.Errorf("status of container %s: %w", c.Id, err)
		}
		if f := st.GetStatus().GetFinishedAt(); f > 0 {
			return time.Unix(0, f), c.Id, nil
		}
	}
	return time.Time{}, "", fmt.Errorf("pod %s: no exited first container", pod)
}

// deathLog records when the agent's sync loop receives each container's
// ContainerDied: from there the pod actor is one in-memory send away.
type deathLog struct {
	mu   sync.Mutex
	seen map[string]time.Time // container ID → first ContainerDied
}

func newDeathLog() *deathLog { return &deathLog{seen: map[string]time.Time{}} }

func (d *deathLog) middleware(next actor.ReceiverFunc) actor.ReceiverFunc {
	return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
		if ev, ok := env.Message.(*messages.PodLifecycleEvent); ok && ev.Type == messages.ContainerDied {
			now := time.Now()
			d.mu.Lock()
			if _, ok := d.seen[ev.ContainerID]; !ok {
				d.seen[ev.ContainerID] = now
			}
			d.mu.Unlock()
		}
		next(c, env)
	}
}

func (d *deathLog) at(containerID string) (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t, ok := d.seen[containerID]
	return t, ok
}
