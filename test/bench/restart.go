package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri/kuberuntime"
	"github.com/actorlet/actorlet/messages/wire"
)

// The kubelet's container restart back-off: 10 s, doubled per restart, at
// most 300 s; the first restart comes at once.
const (
	backOffInitial = 10 * time.Second
	backOffMax     = 300 * time.Second
)

// expectedGap is the back-off before restart n (1-based): 0 for the first.
func expectedGap(n int) time.Duration {
	if n <= 1 {
		return 0
	}
	d := backOffInitial
	for i := 2; i < n; i++ {
		d *= 2
		if d >= backOffMax {
			return backOffMax
		}
	}
	return d
}

// runtimeKinds is the runtimes a section measures.
func (e *env) runtimeKinds() []string {
	if e.runtime == "auto" {
		return []string{"containerd", "process"}
	}
	return []string{e.runtime}
}

// attemptLog follows one pod's container instances over CRI: start and
// finish as the runtime recorded them (ContainerStatus startedAt and
// finishedAt), by attempt. It polls, so an instance the agent removes later
// is still recorded; the polling rate does not affect the figures, which
// are the runtime's own timestamps.
type attemptLog struct {
	mu       sync.Mutex
	started  map[uint32]time.Time
	finished map[uint32]time.Time
}

func followAttempts(ctx context.Context, rt *realRuntime, node, pod string) *attemptLog {
	l := &attemptLog{started: map[uint32]time.Time{}, finished: map[uint32]time.Time{}}
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			cs, err := rt.client.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{
				kuberuntime.LabelNode: node, kuberuntime.LabelPodName: pod, kuberuntime.LabelPodNamespace: benchNamespace,
			}})
			if err == nil {
				for _, c := range cs {
					a := c.GetMetadata().GetAttempt()
					l.mu.Lock()
					_, done := l.finished[a]
					l.mu.Unlock()
					if done {
						continue
					}
					st, err := rt.client.ContainerStatus(ctx, c.Id, false)
					if err != nil {
						continue
					}
					l.mu.Lock()
					if s := st.GetStatus().GetStartedAt(); s > 0 {
						l.started[a] = time.Unix(0, s)
					}
					if f := st.GetStatus().GetFinishedAt(); f > 0 {
						l.finished[a] = time.Unix(0, f)
					}
					l.mu.Unlock()
				}
			}
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	return l
}

// get is attempt a's start and finish (zero when not yet seen).
func (l *attemptLog) get(a uint32) (started, finished time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.started[a], l.finished[a]
}

// restartRow is one runtime's crash-loop figures.
type restartRow struct {
	kind string
	gaps []time.Duration
	err  error
}

// benchRestart is the restart section: a crash-looping container's gaps
// between starts against the back-off, then liveness kills.
func benchRestart(ctx context.Context, e *env) error {
	gaps := 4 // first restart, then back-offs 10, 20, 40 s: about 75 s
	if e.quick {
		gaps = 2
	}
	header := []string{"runtime"}
	for n := 1; n <= gaps; n++ {
		header = append(header, fmt.Sprintf("gap %d (expected %s)", n, expectedGap(n)))
	}
	header = append(header, "max deviation")
	t := newTable("Crash-looping container: restart gaps (s)", header...)
	// The runtimes run side by side (one agent each): the section takes
	// one crash loop's time, not one per runtime.
	kinds := e.runtimeKinds()
	rows := make([]restartRow, len(kinds))
	var wg sync.WaitGroup
	for i, kind := range kinds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rows[i] = crashLoopOnce(ctx, e, kind, gaps)
		}()
	}
	wg.Wait()
	for _, r := range rows {
		if r.err != nil {
			t.note("%s: not measured: %v", r.kind, r.err)
			continue
		}
		cells := []any{r.kind}
		var worst time.Duration
		for n, g := range r.gaps {
			dev := g - expectedGap(n+1)
			if dev < 0 {
				dev = -dev
			}
			worst = max(worst, dev)
			cells = append(cells, fmt.Sprintf("%.2f (%+.2f)", g.Seconds(), (g-expectedGap(n+1)).Seconds()))
		}
		t.add(append(cells, fmt.Sprintf("%.2f", worst.Seconds()))...)
	}
	t.note("one pod, restartPolicy Always, running `sh -c 'exit 1'`; each runtime with its own agent (default flags), both runtimes at the same time")
	t.note("gap n: finishedAt of container instance n-1 → startedAt of instance n, both from CRI ContainerStatus (the runtime's timestamps); in brackets the deviation from the expected back-off (the kubelet's: the first restart at once, then 10 s doubling up to 300 s)")
	t.note("max deviation: the largest |gap − expected| of the row")
	e.report.emit(t)
	return benchLiveness(ctx, e)
}

func crashLoopOnce(ctx context.Context, e *env, kind string, gaps int) (row restartRow) {
	row.kind = kind
	rt, err := openRuntime(ctx, kind, e.dir)
	if err != nil {
		row.err = err
		return row
	}
	defer rt.close()
	row.kind = rt.kind
	if err := rt.ensureImage(ctx); err != nil {
		row.err = err
		return row
	}
	node := fmt.Sprintf("bench-crash-%s-%s", strings.Fields(rt.kind)[0], e.run)
	defer rt.cleanNode(node) // after the agent stopped
	a, err := startAgent(ctx, agentOpts{name: node, dir: e.dir, natsURL: e.natsURL, runtime: rt.client})
	if err != nil {
		row.err = err
		return row
	}
	defer a.Stop()
	p := podSpec{image: rt.image, command: []string{"sh", "-c", "exit 1"}, run: e.run}.pod("crashloop")
	p.Spec.RestartPolicy = v1.RestartPolicyAlways
	key, err := putPod(ctx, e, node, p)
	if err != nil {
		row.err = err
		return row
	}
	defer e.bus.purge(context.Background(), []string{key}) //nolint:errcheck // best effort; cleanNode removes the containers
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	l := followAttempts(fctx, rt, node, p.Name)
	// Wait for instance `gaps` to start: the expected total plus slack.
	var budget time.Duration
	for n := 1; n <= gaps; n++ {
		budget += expectedGap(n)
	}
	if err := waitFor(ctx, budget+2*time.Minute, "the crash-looping container's restarts", func() bool {
		s, _ := l.get(uint32(gaps))
		return !s.IsZero()
	}); err != nil {
		row.err = err
		return row
	}
	for n := 1; n <= gaps; n++ {
		_, fin := l.get(uint32(n - 1))
		start, _ := l.get(uint32(n))
		if fin.IsZero() || start.IsZero() {
			row.err = fmt.Errorf("instance %d or %d not recorded", n-1, n)
			return row
		}
		row.gaps = append(row.gaps, start.Sub(fin))
	}
	return row
}

// putPod writes one pod into the node's desired bucket and returns its key.
func putPod(ctx context.Context, e *env, node string, p *v1.Pod) (string, error) {
	data, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("encode pod %s: %w", p.Name, err)
	}
	key := wire.DesiredNodeKey(node, benchNamespace, p.Name)
	return key, e.bus.put(ctx, map[string][]byte{key: data})
}

// livenessKills is how many liveness kills in a row the liveness table
// measures: the second shows a kill is not followed by CrashLoopBackOff.
const livenessKills = 2

// benchLiveness: a container whose exec liveness probe (period 1 s,
// failure threshold 1) starts failing when the harness removes the file it
// checks: time to the kill and to the restarted container, twice in a row.
func benchLiveness(ctx context.Context, e *env) error {
	t := newTable("Liveness probe failure → kill → restarted (s)", "runtime", "kill", "to kill", "kill → restarted", "failing → restarted")
	kinds := e.runtimeKinds()
	results := make([][][]any, len(kinds))
	errs := make([]error, len(kinds))
	var wg sync.WaitGroup
	for i, kind := range kinds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = livenessOnce(ctx, e, kind)
		}()
	}
	wg.Wait()
	for i, rows := range results {
		if errs[i] != nil {
			t.note("%s: not measured: %v", kinds[i], errs[i])
		}
		for _, r := range rows {
			t.add(r...)
		}
	}
	t.note("one pod running `sh -c \"trap 'exit 0' TERM; touch DIR/ok; sleep 3600 & wait\"` (it exits at SIGTERM, so the grace period does not count) with DIR a hostPath volume mounted at the same path, and an exec liveness probe `sh -c 'test -f DIR/ok'` (periodSeconds 1, failureThreshold 1, no initial delay); restartPolicy Always; each runtime with its own agent, both at the same time")
	t.note("failing: the instant the harness removes DIR/ok (2 s after the container started, so the probe has passed); to kill: failing → the killed container's finishedAt (CRI ContainerStatus): the next probe (≤ 1 s) plus the probe's exec and the kill (StopContainer)")
	t.note("kill → restarted: finishedAt → the next instance's startedAt; the restarted container recreates DIR/ok, then the harness fails it again: kill 2 is not held back by CrashLoopBackOff (the kubelet restarts a probe-killed container in the same pass)")
	e.report.emit(t)
	return nil
}

func livenessOnce(ctx context.Context, e *env, kind string) ([][]any, error) {
	rt, err := openRuntime(ctx, kind, e.dir)
	if err != nil {
		return nil, err
	}
	defer rt.close()
	if err := rt.ensureImage(ctx); err != nil {
		return nil, err
	}
	node := fmt.Sprintf("bench-liveness-%s-%s", strings.Fields(rt.kind)[0], e.run)
	dir := filepath.Join(e.dir, node)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create the probe directory: %w", err)
	}
	defer rt.cleanNode(node) // after the agent stopped
	a, err := startAgent(ctx, agentOpts{name: node, dir: e.dir, natsURL: e.natsURL, runtime: rt.client})
	if err != nil {
		return nil, err
	}
	defer a.Stop()
	ok := filepath.Join(dir, "ok")
	p := podSpec{image: rt.image, command: []string{"sh", "-c", "trap 'exit 0' TERM; touch " + ok + "; sleep 3600 & wait"}, run: e.run}.pod("liveness")
	p.Spec.RestartPolicy = v1.RestartPolicyAlways
	hostDir := v1.HostPathDirectory
	p.Spec.Volumes = []v1.Volume{{Name: "probe", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: dir, Type: &hostDir}}}}
	c := &p.Spec.Containers[0]
	c.VolumeMounts = []v1.VolumeMount{{Name: "probe", MountPath: dir}}
	c.LivenessProbe = &v1.Probe{
		ProbeHandler:     v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "test -f " + ok}}},
		PeriodSeconds:    1,
		FailureThreshold: 1,
		TimeoutSeconds:   1,
	}
	key, err := putPod(ctx, e, node, p)
	if err != nil {
		return nil, err
	}
	defer e.bus.purge(context.Background(), []string{key}) //nolint:errcheck // best effort; cleanNode removes the containers
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	l := followAttempts(fctx, rt, node, p.Name)
	var rows [][]any
	for k := range uint32(livenessKills) {
		if err := waitFor(ctx, 2*time.Minute, fmt.Sprintf("liveness instance %d running", k), func() bool {
			s, _ := l.get(k)
			_, err := os.Stat(ok)
			return !s.IsZero() && err == nil
		}); err != nil {
			return rows, err
		}
		select {
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
			return rows, ctx.Err()
		}
		failing := time.Now()
		if err := os.Remove(ok); err != nil {
			return rows, fmt.Errorf("fail the probe: %w", err)
		}
		if err := waitFor(ctx, 2*time.Minute, fmt.Sprintf("liveness instance %d killed and restarted", k), func() bool {
			s, _ := l.get(k + 1)
			return !s.IsZero()
		}); err != nil {
			return rows, err
		}
		_, fin := l.get(k)
		start, _ := l.get(k + 1)
		if fin.IsZero() {
			return rows, fmt.Errorf("liveness instance %d: no finishedAt recorded", k)
		}
		rows = append(rows, []any{rt.kind, k + 1, secs(fin.Sub(failing)), secs(start.Sub(fin)), secs(start.Sub(failing))})
	}
	return rows, nil
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()) }

// cleanNode removes the sandboxes of one node's pods in the benchmark
// namespace (best effort, after its agent stopped).
func (r *realRuntime) cleanNode(node string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sbs, err := r.client.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{kuberuntime.LabelNode: node, kuberuntime.LabelPodNamespace: benchNamespace},
	})
	if err != nil {
		return
	}
	sort.Slice(sbs, func(i, j int) bool { return sbs[i].Id < sbs[j].Id })
	for _, s := range sbs {
		_ = r.client.StopPodSandbox(ctx, s.Id)
		_ = r.client.RemovePodSandbox(ctx, s.Id)
	}
}
