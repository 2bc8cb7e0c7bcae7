// Command bench is actorlet's benchmark harness (`make bench`, issue 6). It
// runs agents in this process (package node/agent) and, for the idle
// cost, the real actorlet binary as a process, and prints one table per
// measurement. With -out it also writes docs/benchmarks.md (from
// benchmarks.md.tmpl) and the scale plot, so one command regenerates every
// published figure. Nothing here asserts a timing.
//
// Sections (-only, comma-separated):
//
//	start   pod start latency on a real runtime vs raw CRI calls
//	detect  container death → detection and restart per PLEG mode; relisting CPU cost
//	restart crash-loop restart gaps vs the back-off; liveness kill → restart
//	scale   one node with 1k…50k pods on an in-memory CRI runtime
//	fleet   K agents sharing one NATS server, one fleet-wide apply
//	idle    the actorlet binary's CPU and RSS with 0 and 100 pods
//	cluster K agents × P pods on 1 server vs a 3-server cluster (R3), and a server killed mid-apply
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/actorlet/actorlet/cri/procruntime"
	"github.com/actorlet/actorlet/node/agent"
)

// env is what every section shares within one run.
type env struct {
	dir     string // scratch directory, removed at the end
	run     string // run label value
	runtime string // auto, containerd, process
	// callLimit is the agent's --runtime-call-limit in the start section
	callLimit string
	// maxParallel is the agent's --max-parallel-runtime-calls in the start
	// section
	maxParallel int
	quick       bool
	out         string // docs directory to write, or ""
	report      *report
	nats        *server.Server
	natsURL     string
	bus         *client

	startSizes, scaleSizes, fleetSizes []int
	idlePods                           int
	clusterAgents, clusterPods         int
	clusterBuses                       map[string]bool // -cluster-buses
	clusterTraffic                     bool            // -cluster-traffic: count the bus messages by class
	cpuProfile                         string          // -cpuprofile
	window                             time.Duration   // CPU measurement window
	logV                               int             // -v: the agents' klog verbosity
	logPath                            string
	machine                            string

	scalePoints []scalePoint // for the plot
}

var sections = []string{"start", "detect", "restart", "scale", "fleet", "idle", "cluster"}

func main() {
	procruntime.MaybeRunShim() // containers of the process runtime run under this binary
	if len(os.Args) == 3 && os.Args[1] == natsChildArg {
		os.Exit(natsChild(os.Args[2])) // a server of the cluster section's bus
	}
	os.Exit(run())
}

func run() int {
	var (
		only       = flag.String("only", strings.Join(sections, ","), "sections to run, comma-separated: "+strings.Join(sections, ","))
		quick      = flag.Bool("quick", false, "small sizes and short windows (a smoke run of every section in a few minutes)")
		out        = flag.String("out", "", "directory to write benchmarks.md and the plots into (e.g. docs/)")
		rtFlag     = flag.String("runtime", "auto", "real runtime for start/detect/restart: auto (containerd if its socket answers, else the process runtime), containerd, process")
		startSizes = flag.String("start-sizes", "10,30,100", "pod counts of the start section")
		scaleSizes = flag.String("scale-sizes", "1000,10000,50000", "pod counts of the scale section")
		fleetSizes = flag.String("fleet-sizes", "10,100,500", "agent counts of the fleet section")
		clAgents   = flag.Int("cluster-agents", 500, "agents of the cluster section")
		clPods     = flag.Int("cluster-pods", 100, "fleet pods per agent of the cluster section")
		clBuses    = flag.String("cluster-buses", "r1,r3,r3-kill", "buses of the cluster section, comma-separated: r1 (one server), r3 (three servers, R3 buckets), r3-kill (r3 with the desired stream's leader killed mid-apply)")
		clTraffic  = flag.Bool("cluster-traffic", true, "count the cluster section's bus messages by class (a tap on every server, which delivers every message once more: time the fleet with -cluster-traffic=false)")
		window     = flag.Duration("window", 60*time.Second, "CPU/RSS measurement window of the idle section (detect uses a sixth of it)")
		cpuProfile = flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file (and one of each cluster-section server to FILE.<bus>.<server>)")
		pprofAddr  = flag.String("pprof", "", "serve net/http/pprof on this loopback address (e.g. 127.0.0.1:6060) for the run, with mutex and block profiling on, to look inside a stall while it happens")
		logV       = flag.Int("v", 0, "klog verbosity of the in-process agents' log (6: every CRI call with its duration)")
		maxPar     = flag.Int("max-parallel-runtime-calls", agent.DefaultConfig().MaxParallelRuntimeCalls, "the agent's --max-parallel-runtime-calls in the start section")
		callLimit  = flag.String("runtime-call-limit", agent.DefaultConfig().RuntimeCallLimit, "the agent's --runtime-call-limit in the start section: adaptive or fixed")
	)
	flag.Parse()
	if *clAgents <= 0 || *clPods <= 0 {
		fmt.Fprintf(os.Stderr, "-cluster-agents and -cluster-pods must be positive\n")
		return 2
	}
	if *maxPar <= 0 {
		fmt.Fprintf(os.Stderr, "-max-parallel-runtime-calls must be positive\n")
		return 2
	}
	e := &env{runtime: *rtFlag, callLimit: *callLimit, maxParallel: *maxPar, logV: *logV, quick: *quick, out: *out, report: &report{}, window: *window, idlePods: 100,
		clusterAgents: *clAgents, clusterPods: *clPods, clusterTraffic: *clTraffic, cpuProfile: *cpuProfile,
		run: strconv.FormatInt(time.Now().Unix(), 36)}
	e.clusterBuses = map[string]bool{}
	for _, b := range strings.Split(*clBuses, ",") {
		b = strings.TrimSpace(b)
		known := false
		for _, topo := range clusterTopologies {
			known = known || topo.flag == b
		}
		if !known {
			fmt.Fprintf(os.Stderr, "-cluster-buses: unknown bus %q (have r1, r3, r3-kill)\n", b)
			return 2
		}
		e.clusterBuses[b] = true
	}
	var err error
	for _, s := range []struct {
		dst  *[]int
		flag string
		name string
	}{{&e.startSizes, *startSizes, "start-sizes"}, {&e.scaleSizes, *scaleSizes, "scale-sizes"}, {&e.fleetSizes, *fleetSizes, "fleet-sizes"}} {
		if *s.dst, err = parseSizes(s.flag); err != nil {
			fmt.Fprintf(os.Stderr, "-%s: %v\n", s.name, err)
			return 2
		}
	}
	if e.quick {
		e.startSizes, e.scaleSizes, e.fleetSizes = []int{5, 10}, []int{500, 2000}, []int{5, 20}
		e.idlePods, e.window = 20, 15*time.Second
		e.clusterAgents, e.clusterPods = 10, 10
	}
	want := map[string]bool{}
	for _, s := range strings.Split(*only, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !contains(sections, s) {
			fmt.Fprintf(os.Stderr, "-only: unknown section %q (have %s)\n", s, strings.Join(sections, ","))
			return 2
		}
		want[s] = true
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "-cpuprofile: %v\n", err)
			return 1
		}
		defer f.Close()
		_ = pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if *pprofAddr != "" {
		if err := servePprof(*pprofAddr); err != nil {
			fmt.Fprintf(os.Stderr, "-pprof: %v\n", err)
			return 2
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := e.setUp(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		return 1
	}
	defer e.tearDown()
	e.machine = machine()
	fmt.Printf("actorlet benchmarks, run %s\nmachine: %s\nagent logs: %s\n", e.run, e.machine, e.logPath)
	failed := false
	for _, s := range sections {
		if !want[s] {
			continue
		}
		start := time.Now()
		e.report.section = s
		fmt.Printf("\n=== %s\n", s)
		if err := sectionFuncs[s](ctx, e); err != nil {
			fmt.Fprintf(os.Stderr, "bench: section %s: %v\n", s, err)
			e.report.fail(s, err)
			failed = true
		}
		fmt.Printf("(section %s took %s)\n", s, time.Since(start).Round(time.Second))
		if ctx.Err() != nil {
			break
		}
	}
	if e.out != "" {
		if err := e.writeDocs(); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			failed = true
		}
	}
	if failed {
		return 1
	}
	return 0
}

var sectionFuncs = map[string]func(context.Context, *env) error{
	"start":   benchStart,
	"detect":  benchDetect,
	"restart": benchRestart,
	"scale":   benchScale,
	"fleet":   benchFleet,
	"idle":    benchIdle,
	"cluster": benchCluster,
}

func (e *env) setUp(ctx context.Context) error {
	var err error
	if e.dir, err = os.MkdirTemp("", "actorlet-bench-"); err != nil {
		return fmt.Errorf("create the scratch directory: %w", err)
	}
	if e.logPath, err = quietKlog(e.run, e.logV); err != nil {
		return err
	}
	if e.nats, err = startNATS(e.dir); err != nil {
		return err
	}
	e.natsURL = e.nats.ClientURL()
	e.bus, err = dialBus(ctx, e.natsURL, "")
	return err
}

func (e *env) tearDown() {
	if e.bus != nil {
		e.bus.close()
	}
	if e.nats != nil {
		e.nats.Shutdown()
		e.nats.WaitForShutdown()
	}
	os.RemoveAll(e.dir)
}

func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive count", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
