package chaos

import (
	"context"
	"fmt"
	"math/rand"
	"syscall"
	"time"

	"k8s.io/klog/v2"
)

// The kinds of fault, each injected in turn in a seeded random order.
const (
	faultServerKill    = "server-kill"        // SIGKILL a server, start it again later
	faultServerRestart = "server-restart"     // SIGTERM + start (one step of a rolling restart)
	faultMinority      = "partition-minority" // one server cut from the other two (which keep quorum)
	faultMajority      = "partition-majority" // every server cut from every other: no side has a quorum
	faultAgentKill     = "agent-kill"         // kill -9 an agent (its pods' shims live on), start it again
	faultSlowLink      = "slow-link"          // every link of one server (routes, clients) delayed
)

var faultKinds = []string{faultServerKill, faultServerRestart, faultMinority, faultMajority, faultAgentKill, faultSlowLink}

// injector runs the seeded fault schedule.
type injector struct {
	m       *model
	cluster *natsCluster
	agents  []*agentProc
	rnd     *rand.Rand
	logf    func(format string, args ...any)
}

// run injects faults until ctx ends, and at least one of each kind:
// rounds of every kind in a shuffled order, each held 2–6 s then healed,
// 3–6 s apart. It returns with every fault healed; healAll then makes sure
// every server and agent runs.
func (in *injector) run(ctx context.Context) {
	var order []string
	// The first round injects every kind once, so the run stops only after
	// len(faultKinds) faults.
	for injected := 0; ctx.Err() == nil || injected < len(faultKinds); injected++ {
		if len(order) == 0 {
			order = append([]string(nil), faultKinds...)
			in.rnd.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		}
		kind := order[0]
		order = order[1:]
		hold := 2*time.Second + time.Duration(in.rnd.Int63n(int64(4*time.Second)))
		gap := 3*time.Second + time.Duration(in.rnd.Int63n(int64(3*time.Second)))
		in.inject(kind, hold)
		time.Sleep(gap)
	}
}

func (in *injector) inject(kind string, hold time.Duration) {
	n := len(in.cluster.procs)
	srv := in.rnd.Intn(n)
	ag := in.agents[in.rnd.Intn(len(in.agents))]
	f := &faultRecord{kind: kind}
	var heal func()
	var slow time.Duration
	switch kind {
	case faultServerKill:
		f.target = in.cluster.Name(srv)
		heal = func() { in.startServer(srv) }
	case faultServerRestart:
		f.target = in.cluster.Name(srv)
		heal = func() {}
		hold = 0
	case faultMinority:
		f.target = in.cluster.Name(srv) + " alone"
		heal = in.cluster.heal
	case faultMajority:
		f.target = "all servers apart"
		heal = in.cluster.heal
	case faultAgentKill:
		f.target = ag.node
		heal = func() {
			if err := ag.Start(); err != nil {
				in.logf("restart agent %s: %v", ag.node, err)
			}
		}
	case faultSlowLink:
		d := 200*time.Millisecond + time.Duration(in.rnd.Int63n(int64(600*time.Millisecond)))
		f.target = fmt.Sprintf("%s +%s", in.cluster.Name(srv), d)
		heal = in.cluster.heal
		slow = d
	}
	in.m.mu.Lock()
	f.start = time.Now()
	in.m.faults = append(in.m.faults, f)
	in.m.mu.Unlock()
	in.logf("%s fault %s %s", in.m.since(f.start), kind, f.target)
	klog.V(2).InfoS("Chaos fault", "kind", kind, "target", f.target)
	switch kind {
	case faultServerKill:
		in.cluster.Signal(srv, syscall.SIGKILL)
	case faultServerRestart:
		in.cluster.Signal(srv, syscall.SIGTERM)
		in.startServer(srv)
	case faultMinority:
		var others []int
		for i := range n {
			if i != srv {
				others = append(others, i)
			}
		}
		in.cluster.partition([]int{srv}, others)
	case faultMajority:
		var groups [][]int
		for i := range n {
			groups = append(groups, []int{i})
		}
		in.cluster.partition(groups...)
	case faultAgentKill:
		ag.Signal(syscall.SIGKILL)
	case faultSlowLink:
		in.cluster.slow(srv, slow)
	}
	time.Sleep(hold)
	heal()
	in.m.mu.Lock()
	f.healed = time.Now()
	in.m.mu.Unlock()
}

// startServer starts server i and waits until it is healthy (logged if
// not: the run goes on, and the checker sees what follows).
func (in *injector) startServer(i int) {
	if err := in.cluster.Start(i); err != nil {
		in.logf("%v", err)
		return
	}
	if err := in.cluster.waitHealthy(i); err != nil {
		in.logf("%v", err)
	}
}

// healAll makes sure every link is whole and every server and agent runs.
func (in *injector) healAll() {
	in.cluster.heal()
	for i := range in.cluster.procs {
		if !in.cluster.Running(i) {
			in.startServer(i)
		}
	}
	for _, a := range in.agents {
		if err := a.Start(); err != nil {
			in.logf("start agent %s: %v", a.node, err)
		}
	}
}
