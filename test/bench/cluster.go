package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/test/memcri"
)

// benchCluster is section 7: the fleet of section 4 at a realistic size
// (K agents × P fleet pods each) on a single server and on a 3-server
// JetStream cluster with R3 buckets, and on the cluster again with the
// desired stream's leader killed in the middle of the apply. The bus is
// authenticated as in production: the harness is the operator, every
// agent runs with its own node credentials. The servers are processes of
// their own (benchBus); the agents share this one.
func benchCluster(ctx context.Context, e *env) error {
	k, p := e.clusterAgents, e.clusterPods
	t := newTable(fmt.Sprintf("Fleet on a NATS cluster: %d agents × %d pods, one fleet-wide apply", k, p),
		"bus", "pods", "provision nodes (s)", "start agents (s)", "apply → all Running (s)", "p50 pod (s)", "p99 pod (s)", "NATS msgs/pod", "NATS KiB/pod", "idle CPU/agent (% core)", "heap/agent (MiB)", "idle CPU/agent, pods running (% core)", "heap/agent, pods running (MiB)",
		"apply CPU: agents (core-s)", "apply CPU: servers (core-s)", "apply: machine busy (%)")
	var done []clusterTopology
	var traffic []busTraffic
	for _, topo := range clusterTopologies {
		if !e.clusterBuses[topo.flag] {
			continue
		}
		start := time.Now()
		tr, err := clusterOnce(ctx, e, topo, k, p, t)
		if err == nil {
			done, traffic = append(done, topo), append(traffic, tr)
		} else {
			t.note("%s did not complete: %v", topo.name, err)
			if ctx.Err() != nil {
				break
			}
		}
		fmt.Printf("  %s: %s\n", topo.name, time.Since(start).Round(time.Second))
		if err == nil {
			// The row at once: a later bus that does not converge and is
			// interrupted takes the table with it.
			fmt.Printf("    %s\n", strings.Join(t.rows[len(t.rows)-1], " | "))
		}
	}
	t.note("bus: authenticated (docs/security.md): servers trust a test authority; the harness bootstraps the buckets and provisions every node (its consumers and .creds, as `actorletctl node add`) with admin credentials; each agent connects with its own node credentials and inbox prefix")
	t.note("every agent: in this process, its own node name, root dir and in-memory runtime (test/memcri), relist 1 s, heartbeat 10 s, connected with the full server list")
	t.note("apply: %d keys fleet.<ns>.<name> every node's labels select, written by 32 writers; Running = the pod's first Running in actorlet_status, as a watching operator sees it", p)
	t.note("NATS msgs and bytes: the sum of every running server's varz (in+out, routes included) from just before the apply until every pod runs, over K×P pods; a killed server's counts are lost")
	t.note("servers: each a process of its own (this binary as nats-server, the same server code), as a fleet's servers are; until 2026-11-27 they ran in the harness's process, sharing its Go scheduler and heap with the agents")
	t.note("apply CPU: the CPU time this process (the agents and the harness) and the servers (a killed one's up to its end) used from just before the apply until every pod runs; machine busy: the whole machine's busy time over its capacity in that time")
	t.note("idle CPU: this process (the agents and the harness, not the servers) over %s, divided by K: before the apply (no pods, heartbeats only) and once every pod runs (relist of P pods per agent); heap: live heap after a GC, added since the agents started, divided by K", e.fleetWindow())
	t.note("the harness's own status watcher is re-created when KV_%s elects a leader, so it measures the fleet, not a stalled watcher", wire.StatusBucket)
	t.note("kill: once half the keys are written, the server leading KV_%s is shut down; the rest are written (each retried until acknowledged)", wire.DesiredBucket)
	e.report.emit(t)
	if !e.clusterTraffic {
		t.note("run with -cluster-traffic=false: no tap on the servers, the messages by class are not counted")
	}
	if len(done) > 0 && e.clusterTraffic {
		e.report.emit(trafficTable(k, p, done, traffic))
		detailTable(k, p, done, traffic).print(os.Stdout) // for the analysis; not in the docs
	}
	return nil
}

type clusterTopology struct {
	flag    string // its name in -cluster-buses
	name    string
	servers int
	kill    bool
}

var clusterTopologies = []clusterTopology{
	{flag: "r1", name: "1 server, R1", servers: 1},
	{flag: "r3", name: "3 servers, R3", servers: 3},
	{flag: "r3-kill", name: "3 servers, R3, leader killed mid-apply", servers: 3, kill: true},
}

// trafficTable is the apply's bus traffic per pod by class, one pair of
// columns per topology.
func trafficTable(k, p int, topos []clusterTopology, traffic []busTraffic) *table {
	header := []string{"class"}
	for _, topo := range topos {
		header = append(header, topo.name+" msgs/pod", topo.name+" B/pod")
	}
	t := newTable(fmt.Sprintf("NATS traffic per pod by class: %d agents × %d pods, one fleet-wide apply", k, p), header...)
	pods := float64(k * p)
	row := func(name string, f func(busTraffic) classCount) {
		cells := []any{name}
		for _, tr := range traffic {
			c := f(tr)
			cells = append(cells, fmt.Sprintf("%.2f", float64(c.msgs)/pods), fmt.Sprintf("%.0f", float64(c.bytes)/pods))
		}
		t.add(cells...)
	}
	for _, c := range trafficClasses {
		row(c.name, func(tr busTraffic) classCount { return tr.classes[c.name] })
	}
	row("all classes (each message once, where it was published)", func(tr busTraffic) classCount {
		var s classCount
		for _, c := range tr.classes {
			s.msgs, s.bytes = s.msgs+c.msgs, s.bytes+c.bytes
		}
		return s
	})
	row("routes (sent between servers, all accounts)", func(tr busTraffic) classCount { return tr.routes })
	row("servers' varz in+out (the NATS msgs/pod above)", func(tr busTraffic) classCount { return tr.total })
	t.note("counted from the servers' side, from just before the apply until every pod runs, over K×P pods: a tap on every server holds a queue subscription (one group, a member on each server, so each message is counted once, on the server it was published to, and the taps add no route traffic) to `>` in the application account and to `$NRG.>` in the system account; bytes are headers and payload")
	for _, c := range trafficClasses {
		t.note("%s: %s", c.name, c.how)
	}
	for i, tr := range traffic {
		if tr.dropped > 0 {
			t.note("%s: the taps fell behind and dropped %d messages (%.2f per pod), counted in no class", topos[i].name, tr.dropped, float64(tr.dropped)/pods)
		}
	}
	t.note("routes: the servers' routez (out messages and bytes of every route, all accounts, raft included); varz: every running server's in+out messages and bytes, less the taps' connections (connz), as the table above; a killed server's counts are lost")
	return t
}

func clusterOnce(ctx context.Context, e *env, topo clusterTopology, k, p int, t *table) (busTraffic, error) {
	dir := filepath.Join(e.dir, fmt.Sprintf("cluster-%d-%v", topo.servers, topo.kill))
	profile := ""
	if e.cpuProfile != "" {
		profile = e.cpuProfile + "." + topo.flag
	}
	bb, err := startBenchBus(dir, topo.servers, profile)
	if err != nil {
		return busTraffic{}, err
	}
	defer bb.stop()
	c, err := bb.connectOperator(ctx, topo.servers)
	if err != nil {
		return busTraffic{}, err
	}
	defer c.close()
	tap, err := startBusTap(bb, e.clusterTraffic)
	if err != nil {
		return busTraffic{}, err
	}
	defer tap.stop()

	labels := map[string]string{"actorlet.io/bench-cluster": e.run}
	prefix := fmt.Sprintf("bench-cl-%s-", e.run)
	name := func(i int) string { return fmt.Sprintf("%s%d", prefix, i) }
	// Provision every node first, as an operator would before starting
	// the fleet (R3 consumers: four per node).
	t0 := time.Now()
	creds := make([]string, k)
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	err = parallel(ctx, 8, idx, func(ctx context.Context, i int) error {
		pctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		var err error
		creds[i], err = bb.provision(pctx, c, name(i))
		return err
	})
	if err != nil {
		return busTraffic{}, err
	}
	provisioned := time.Since(t0)
	url := bb.url()
	f, err := startFleet(ctx, e, k, func(_ context.Context, i int) (agentOpts, error) {
		return agentOpts{name: name(i), dir: dir, natsURL: url, creds: creds[i], runtime: memcri.New(),
			labels: labels, heartbeat: 10 * time.Second, maxPods: p + 10}, nil
	})
	defer f.stop()
	if err != nil {
		return busTraffic{}, err
	}

	spec := podSpec{image: "bench/sleep:1", command: []string{"sleep", "3600"}, run: e.run}
	values, err := spec.fleetPods("cl", p, labels)
	if err != nil {
		return busTraffic{}, err
	}
	w, err := c.watchStatusFollowingLeaders(ctx, statusFilter("*", benchNamespace))
	if err != nil {
		return busTraffic{}, err
	}
	defer w.stop()
	// The counters are read just before the apply and once every pod
	// runs; the tap's readings are kept for the traffic table.
	var traffic []busTraffic
	var cpu []cpuSplit
	counters := func() (int64, int64) {
		cpu = append(cpu, readCPUSplit(bb))
		tr, err := tap.read(ctx)
		if err != nil {
			tr = busTraffic{classes: map[string]classCount{}}
		}
		traffic = append(traffic, tr)
		return tr.total.msgs, tr.total.bytes
	}
	r, err := applyFleet(ctx, w, prefix, k*p, 30*time.Minute, counters, func(ctx context.Context) error {
		keys := keysOf(values)
		half := len(keys) / 2
		if err := c.putRetrying(ctx, values, keys[:half]); err != nil {
			return err
		}
		if topo.kill {
			killed, err := bb.killLeader(ctx, c, "KV_"+wire.DesiredBucket)
			if err != nil {
				return err
			}
			fmt.Printf("  killed %s, the leader of KV_%s\n", killed, wire.DesiredBucket)
		}
		return c.putRetrying(ctx, values, keys[half:])
	})
	if err != nil {
		return busTraffic{}, err
	}
	heapRunning := f.heapNow()
	idleRunning, err := f.idleCPU(ctx, e.fleetWindow())
	if err != nil {
		return busTraffic{}, err
	}
	sec := func(d time.Duration) string { return fmt.Sprintf("%.1f", d.Seconds()) }
	applied := cpu[1].sub(cpu[0])
	t.add(topo.name, r.pods, sec(provisioned), sec(f.startup), sec(r.took), sec(r.lat.percentile(50)), sec(r.lat.percentile(99)),
		fmt.Sprintf("%.0f", r.msgsPerPod()), fmt.Sprintf("%.1f", r.kibPerPod()),
		fmt.Sprintf("%.3f", f.idlePerAgent), fmt.Sprintf("%.1f", f.heapPerAgent),
		fmt.Sprintf("%.3f", idleRunning), fmt.Sprintf("%.1f", heapRunning),
		sec(applied.self), sec(applied.servers), fmt.Sprintf("%.0f", 100*applied.busy.Seconds()/max(applied.busy+applied.idle, 1).Seconds()))
	return traffic[1].sub(traffic[0]), nil
}

// cpuSplit is a reading of where the CPU went: this process (the agents
// and the harness), the bus's servers, and the whole machine's busy and
// idle time.
type cpuSplit struct{ self, servers, busy, idle time.Duration }

func readCPUSplit(bb *benchBus) cpuSplit {
	self, _ := procCPU("self")
	busy, idle, _ := machineCPU()
	return cpuSplit{self: self, servers: bb.cpu(), busy: busy, idle: idle}
}

func (c cpuSplit) sub(before cpuSplit) cpuSplit {
	return cpuSplit{self: c.self - before.self, servers: c.servers - before.servers, busy: c.busy - before.busy, idle: c.idle - before.idle}
}

// putRetrying writes the given keys, retrying each until acknowledged (a
// write can fail while a stream leader is elected).
func (c *client) putRetrying(ctx context.Context, values map[string][]byte, keys []string) error {
	return parallel(ctx, 32, keys, func(ctx context.Context, k string) error {
		for {
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := c.desired.Put(wctx, k, values[k])
			cancel()
			if err == nil {
				return nil
			}
			if ctx.Err() != nil {
				return fmt.Errorf("put desired %s: %w", k, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

// watchStatusFollowingLeaders is watchStatus that re-creates its watcher
// whenever KV_actorlet_status elects a leader: an ordered consumer that
// lived on a killed server otherwise stalls until its heartbeats time out
// (~15-20 s), and the harness would measure its own watcher, not the fleet.
func (c *client) watchStatusFollowingLeaders(ctx context.Context, filter string) (*statusWatch, error) {
	ctx, cancel := context.WithCancel(ctx)
	elected := make(chan struct{}, 1)
	unsub, err := c.conn.OnStreamLeaderElected("KV_"+wire.StatusBucket, func() {
		select {
		case elected <- struct{}{}:
		default:
		}
	})
	if err != nil {
		cancel()
		return nil, err
	}
	sw := &statusWatch{pods: map[string]*podState{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(sw.done)
		defer unsub()
		for ctx.Err() == nil {
			w, err := c.status.Watch(ctx, filter)
			if err != nil {
				select {
				case <-ctx.Done():
				case <-time.After(200 * time.Millisecond):
				}
				continue
			}
		watch:
			for {
				select {
				case <-ctx.Done():
					break watch
				case <-elected:
					break watch
				case e, ok := <-w.Updates():
					if !ok {
						break watch
					}
					if e != nil {
						sw.observe(e, time.Now())
					}
				}
			}
			_ = w.Stop()
		}
	}()
	return sw, nil
}
