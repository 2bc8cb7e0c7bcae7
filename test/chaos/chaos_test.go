package chaos

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/test/testenv"
	"github.com/actorlet/actorlet/test/testutil"
)

var (
	duration    = flag.Duration("chaos.duration", 45*time.Second, "how long faults are injected, at least one of each kind (make chaos DURATION=30m)")
	seed        = flag.Int64("chaos.seed", 1, "seed of the fault schedule and the workload (make chaos SEED=n)")
	agentsFlag  = flag.Int("chaos.agents", 5, "agents (nodes), each a real process")
	perNodeFlag = flag.Int("chaos.pods-per-node", 5, "node pods the operator keeps alive per node (about)")
	keepFlag    = flag.Bool("chaos.keep", false, "keep the servers' and agents' logs (and stores) even when the run passes")
)

// The binaries the test runs, built once by TestMain.
var natsServerBin, actorletBin string

func TestMain(m *testing.M) {
	flag.Parse()
	testutil.QuietKlog("")
	os.Exit(buildAndRun(m))
}

// buildAndRun builds nats-server (from the module go.mod pins) and
// actorlet into a new directory, runs the tests and removes it.
func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "chaos-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, "create a directory for the binaries:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	natsServerBin, actorletBin = filepath.Join(dir, "nats-server"), filepath.Join(dir, "actorlet")
	for pkg, out := range map[string]string{
		"github.com/nats-io/nats-server/v2":         natsServerBin,
		"github.com/actorlet/actorlet/cmd/actorlet": actorletBin,
	} {
		build := exec.Command("go", "build", "-o", out, pkg)
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n", pkg, err)
			return 1
		}
	}
	return m.Run()
}

// detailedViolations is how many violations are printed with the faults
// around them and the agent's log lines.
const detailedViolations = 10

// convergeTimeout bounds the wait, after the last fault, for the desired
// state to be what runs.
const convergeTimeout = 90 * time.Second

// TestChaos runs the workload and the fault schedule for -chaos.duration
// (45 s in make test, seed 1; at least one fault of each kind) and fails on any violation of the checker's
// invariants. It logs the fault schedule, a table (faults by kind,
// operations, violations, recovery times) and each violation with the
// faults around it and the agent's log lines about its pod.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos run: not in -short")
	}
	dir, err := os.MkdirTemp("", "chaos")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() || *keepFlag {
			t.Logf("servers' and agents' logs kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	run := fmt.Sprintf("chaos%d", time.Now().UnixNano())
	m := newModel(run)
	m.logf = t.Logf
	var agents []*agentProc
	t.Cleanup(func() { killEverything(t, dir, run, agents) }) // every agent started below
	cl := startCluster(t, natsServerBin, dir, 3)
	op := cl.connectOperator("chaos-operator")

	// The nodes: provisioned as `actorletctl node add` does, started with
	// the client proxies' URLs and their own credentials. Even nodes are in
	// group a, odd ones in group b (fleet pods select by either or both).
	nodeLabels := map[string]map[string]string{}
	var nodes []string
	for i := range *agentsFlag {
		node := fmt.Sprintf("c%d", i)
		creds, err := cl.addNode(op, node)
		if err != nil {
			t.Fatal(err)
		}
		root := filepath.Join(dir, node)
		if err := os.Mkdir(root, 0o700); err != nil {
			t.Fatal(err)
		}
		labels := "chaos=yes,chaos-group=" + []string{"a", "b"}[i%2]
		nodeLabels[node] = parseLabels(labels)
		a := newAgent(actorletBin, node, root, cl.AgentURL(), creds, labels)
		a.onExit = func(node, status, last string) {
			m.agentExited(node, status, last)
			t.Logf("%s agent %s exited by itself (%s), started again in %s; its last log line: %s", m.since(time.Now()), node, status, restartDelay, last)
		}
		if err := a.Start(); err != nil {
			t.Fatal(err)
		}
		agents = append(agents, a)
		nodes = append(nodes, node)
	}
	ctx := context.Background()
	nodesKV := bustest.KeyValue(t, op.JS, wire.NodesBucket)
	testutil.EventuallyEvery(t, 2*time.Minute, 500*time.Millisecond, func() error {
		for _, n := range nodes {
			if _, err := nodesKV.Get(ctx, wire.EncodeName(n)); err != nil {
				return fmt.Errorf("heartbeat of %s: %w", n, err)
			}
		}
		return nil
	})
	desired := bustest.KeyValue(t, op.JS, wire.DesiredBucket)
	status := bustest.KeyValue(t, op.JS, wire.StatusBucket)

	ck := newChecker(m)
	rnd := rand.New(rand.NewSource(*seed))
	w := &workload{m: m, kv: desired, rnd: rand.New(rand.NewSource(rnd.Int63())), nodes: nodes, nodeLabels: nodeLabels,
		perNode: *perNodeFlag, fleetPods: 3, every: 250 * time.Millisecond}
	in := &injector{m: m, cluster: cl, agents: agents, rnd: rand.New(rand.NewSource(rnd.Int63())), logf: t.Logf}

	// The checker and the status watch run from the first write to the
	// end; the workload from a warm-up before the first fault to the last
	// fault.
	checkCtx, stopCheck := context.WithCancel(ctx)
	var bg sync.WaitGroup
	bg.Add(2)
	go func() { defer bg.Done(); ck.watchStatus(checkCtx, op.JS) }()
	go func() {
		defer bg.Done()
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-checkCtx.Done():
				return
			case <-tick.C:
			}
			ck.scan()
			trackRecovery(m, ck)
		}
	}()
	defer func() { stopCheck(); bg.Wait() }()

	workCtx, stopWork := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); w.run(workCtx) }()
	time.Sleep(10 * time.Second) // warm-up: pods on every node before the first fault
	faultCtx, stopFaults := context.WithTimeout(ctx, *duration)
	in.run(faultCtx)
	stopFaults()
	in.healAll()
	stopWork()
	wg.Wait()
	last := time.Now()
	t.Logf("%s last fault healed; waiting for convergence", m.since(last))

	// Invariant 4: everything converges to the bucket's content.
	var convErr error
	deadline := time.Now().Add(convergeTimeout)
	for {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		ck.scan()
		convErr = ck.converged(cctx, desired, status)
		cancel()
		if convErr == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	convergence := time.Since(last)
	stopCheck()
	bg.Wait()
	trackRecovery(m, ck)
	ck.countObserved()

	t.Log("\n" + report(m, convergence, convErr))
	// The first violations in full (faults around them, agent log lines);
	// the rest one line each.
	for i, v := range m.violations {
		if i < detailedViolations {
			t.Errorf("%s", describe(m, v, agents))
		} else {
			t.Errorf("VIOLATION %s: pod %s/%s on node %q at %s: %s", v.kind, namespace, v.pod, v.node, m.since(v.at), v.detail)
		}
	}
	if convErr != nil {
		t.Errorf("no convergence within %s of the last fault: %v", convergeTimeout, convErr)
	}
}

// killEverything ends every process of the run, in an order in which
// none comes back: the agents first (a live agent restarts a killed
// container), then their runtimes' shims and sandbox holders, then the
// containers; it checks that none is left, and removes the containers'
// cgroups.
func killEverything(t *testing.T, dir, run string, agents []*agentProc) {
	for _, a := range agents {
		a.close()
	}
	shims := func() []testutil.Proc {
		return append(testutil.ProcsWithEnvPrefix("ACTORLET_PROCRUNTIME_SHIM="+dir), testutil.ProcsWritingUnder(dir)...)
	}
	containers := func() []testutil.Proc { return testutil.ProcsWithEnvPrefix(envRun + "=" + run) }
	testutil.KillAll(shims())
	testutil.KillAll(containers())
	testutil.EventuallyEvery(t, 10*time.Second, 100*time.Millisecond, func() error {
		left := append(shims(), containers()...)
		testutil.KillAll(left)
		if len(left) > 0 {
			return fmt.Errorf("%d shims, sandbox holders and containers of the run left", len(left))
		}
		return nil
	})
	for _, a := range agents {
		testenv.RemoveContainerCgroups(t, filepath.Join(a.root, "runtime"))
	}
}

// trackRecovery sets the recovery time of every healed fault whose pods
// all run again: every pod acknowledged before the heal runs on each node
// it selects with a Running status.
func trackRecovery(m *model, ck *checker) {
	m.mu.Lock()
	var pending []*faultRecord
	for _, f := range m.faults {
		if !f.healed.IsZero() && !f.recovered {
			pending = append(pending, f)
		}
	}
	m.mu.Unlock()
	for _, f := range pending {
		if ck.recovered(f.healed) {
			m.mu.Lock()
			f.recovered, f.recovery = true, time.Since(f.healed)
			m.mu.Unlock()
		}
	}
}

// report is the run's table: faults by kind with their recovery times,
// operations, violations by kind, convergence.
func report(m *model, convergence time.Duration, convErr error) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "chaos run %s: seed %d, %d agents, faults for %s\n\n", m.run, *seed, *agentsFlag, *duration)
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FAULT\tINJECTED\tRECOVERED\tRECOVERY P50\tRECOVERY MAX")
	byKind := map[string][]*faultRecord{}
	for _, f := range m.faults {
		byKind[f.kind] = append(byKind[f.kind], f)
	}
	total, totalRec := 0, 0
	var all []time.Duration
	for _, k := range faultKinds {
		fs := byKind[k]
		var rec []time.Duration
		for _, f := range fs {
			if f.recovered {
				rec = append(rec, f.recovery)
			}
		}
		all = append(all, rec...)
		total, totalRec = total+len(fs), totalRec+len(rec)
		p50, max := percentiles(rec)
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", k, len(fs), len(rec), p50, max)
	}
	p50, max := percentiles(all)
	fmt.Fprintf(tw, "all\t%d\t%d\t%s\t%s\n", total, totalRec, p50, max)
	_ = tw.Flush()
	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OPERATION\tACKNOWLEDGED\tFAILED (outcome unknown)")
	var kinds []string
	for k := range m.ops {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", k, m.ops[k].acked, m.ops[k].failed)
	}
	_ = tw.Flush()
	b.WriteString("\n")
	byViolation := map[string]int{}
	for _, v := range m.violations {
		byViolation[v.kind]++
	}
	fmt.Fprintf(&b, "container processes observed: %d (pods on nodes: %d)\n", m.observedPIDs, m.observedPlacements)
	fmt.Fprintf(&b, "agents that exited by themselves (started again after %s, as systemd would): %d\n", restartDelay, len(m.exits))
	for _, e := range m.exits {
		fmt.Fprintf(&b, "  %s\n", e)
	}
	fmt.Fprintf(&b, "violations: %d", len(m.violations))
	for _, k := range []string{"killed", "status deleted", "ran twice", "ran again", "not gone", "wrong node", "unknown pod", "lost write"} {
		if byViolation[k] > 0 {
			fmt.Fprintf(&b, ", %s %d", k, byViolation[k])
		}
	}
	b.WriteString("\n")
	if convErr != nil {
		fmt.Fprintf(&b, "convergence after the last fault: none within %s\n", convergeTimeout)
	} else {
		fmt.Fprintf(&b, "convergence after the last fault: %s\n", convergence.Round(100*time.Millisecond))
	}
	return b.String()
}

func percentiles(ds []time.Duration) (p50, max string) {
	if len(ds) == 0 {
		return "-", "-"
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2].Round(100 * time.Millisecond).String(), s[len(s)-1].Round(100 * time.Millisecond).String()
}

// describe is a violation with the faults within 30 s of it and the log
// lines of the pod's agent(s) that name the pod.
func describe(m *model, v violation, agents []*agentProc) string {
	var b strings.Builder
	fmt.Fprintf(&b, "VIOLATION %s: pod %s/%s on node %q at %s: %s\n", v.kind, namespace, v.pod, v.node, m.since(v.at), v.detail)
	b.WriteString("  faults around it:\n")
	for _, f := range m.faultsAround(v.at, 30*time.Second) {
		fmt.Fprintf(&b, "    %s\n", f)
	}
	for _, a := range agents {
		if v.node != "" && a.node != v.node {
			continue
		}
		fmt.Fprintf(&b, "  agent %s log lines from 30 s before to 5 s after naming %s or its desired-pods watch (last 25):\n", a.node, v.pod)
		for _, l := range a.logLines(25, v.at.Add(-30*time.Second), v.at.Add(5*time.Second), append([]string{v.pod}, sourceWords...)...) {
			fmt.Fprintf(&b, "    %s\n", l)
		}
	}
	return b.String()
}
