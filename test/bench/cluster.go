package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/actorlet/actorlet/messages/wire"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/actorlet/actorlet/cmd/actorlet/agent"
	"github.com/actorlet/actorlet/cmd/actorlet/bus"
	"github.com/actorlet/actorlet/test/memcri"
)

// benchCluster is section 6: the fleet of section 4 at a realistic size
// (K agents × P fleet pods each) on a single server and on a 3-server
// JetStream cluster with R3 buckets, and on the cluster again with the
// desired stream's leader killed in the middle of the apply.
func benchCluster(ctx context.Context, e *env) error {
	k, p := e.clusterAgents, e.clusterPods
	t := newTable(fmt.Sprintf("Fleet on a NATS cluster: %d agents × %d pods, one fleet-wide apply", k, p),
		"bus", "pods", "start agents (s)", "apply → all Running (s)", "p50 pod (s)", "p99 pod (s)", "NATS msgs/pod", "NATS KiB/pod", "idle CPU/agent (% core)", "heap/agent (MiB)")
	for _, topo := range []clusterTopology{
		{name: "1 server, R1", servers: 1},
		{name: "3 servers, R3", servers: 3},
		{name: "3 servers, R3, leader killed mid-apply", servers: 3, kill: true},
	} {
		if err := clusterOnce(ctx, e, topo, k, p, t); err != nil {
			t.note("%s did not complete: %v", topo.name, err)
			if ctx.Err() != nil {
				break
			}
		}
	}
	t.note("every agent: in this process, its own node name, root dir and in-memory runtime (test/memcri), relist 1 s, heartbeat 10 s, connected with the full server list")
	t.note("apply: %d keys fleet.<ns>.<name> every node's labels select, written by 32 writers; Running = the pod's first Running in actorlet_status, as a watching operator sees it", p)
	t.note("NATS msgs and bytes: the sum of every running server's varz (in+out, routes included) from just before the apply until every pod runs, over K×P pods; a killed server's counts are lost")
	t.note("the harness's own status watcher is re-created when KV_%s elects a leader (as the agents' desired-pods watchers are), so it measures the fleet, not a stalled watcher", wire.StatusBucket)
	t.note("kill: once half the keys are written, the server leading KV_%s is shut down; the rest are written (each retried until acknowledged)", wire.DesiredBucket)
	e.report.emit(t)
	return nil
}

type clusterTopology struct {
	name    string
	servers int
	kill    bool
}

// benchBus is one or more in-process nats-servers; with more than one they
// form a JetStream cluster.
type benchBus struct {
	servers []*server.Server
}

func startBenchBus(dir string, n int) (*benchBus, error) {
	b := &benchBus{}
	routes := make([]int, n)
	for i := range routes {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		routes[i] = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	for i := range n {
		o := &server.Options{
			ServerName: fmt.Sprintf("bench-%d", i+1), Host: "127.0.0.1", Port: -1, JetStream: true,
			StoreDir: filepath.Join(dir, fmt.Sprintf("nats-%d", i+1)), NoSigs: true, NoLog: true, MaxPayload: 8 << 20,
		}
		if n > 1 {
			o.Cluster = server.ClusterOpts{Name: "bench", Host: "127.0.0.1", Port: routes[i]}
			for j, p := range routes {
				if j != i {
					o.Routes = append(o.Routes, &url.URL{Scheme: "nats-route", Host: fmt.Sprintf("127.0.0.1:%d", p)})
				}
			}
		}
		s, err := server.NewServer(o)
		if err != nil {
			b.stop()
			return nil, fmt.Errorf("create NATS server %d: %w", i+1, err)
		}
		go s.Start()
		b.servers = append(b.servers, s)
	}
	for _, s := range b.servers {
		if !s.ReadyForConnections(30 * time.Second) {
			b.stop()
			return nil, errors.New("NATS servers not ready within 30 s")
		}
	}
	return b, nil
}

func (b *benchBus) url() string {
	var urls []string
	for _, s := range b.servers {
		urls = append(urls, s.ClientURL())
	}
	return strings.Join(urls, ",")
}

func (b *benchBus) stop() {
	for _, s := range b.servers {
		if s != nil {
			s.Shutdown()
			s.WaitForShutdown()
		}
	}
}

// varz sums every running server's message and byte counters.
func (b *benchBus) varz() (msgs, bytes int64) {
	for _, s := range b.servers {
		if s == nil || !s.Running() {
			continue
		}
		v := varz(s)
		msgs += v.InMsgs + v.OutMsgs
		bytes += v.InBytes + v.OutBytes
	}
	return msgs, bytes
}

// killLeader shuts down the server leading stream; it returns its name.
func (b *benchBus) killLeader(stream string) string {
	for i, s := range b.servers {
		if s != nil && s.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream) {
			name := s.Name()
			s.Shutdown()
			s.WaitForShutdown()
			b.servers[i] = nil
			return name
		}
	}
	return ""
}

func clusterOnce(ctx context.Context, e *env, topo clusterTopology, k, p int, t *table) error {
	dir := filepath.Join(e.dir, fmt.Sprintf("cluster-%d-%v", topo.servers, topo.kill))
	bb, err := startBenchBus(dir, topo.servers)
	if err != nil {
		return err
	}
	defer bb.stop()
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	op, err := bus.Connect(cctx, bus.Options{URL: bb.url(), Name: "actorlet-bench-operator"})
	if err == nil {
		err = op.EnsureProtocolWith(cctx, bus.ProtocolSettings{Replicas: topo.servers})
	}
	cancel()
	if err != nil {
		return fmt.Errorf("bus: %w", err)
	}
	defer op.Close()
	c := &client{conn: op}
	if c.desired, err = op.JS.KeyValue(ctx, wire.DesiredBucket); err == nil {
		c.status, err = op.JS.KeyValue(ctx, wire.StatusBucket)
	}
	if err != nil {
		return err
	}

	labels := map[string]string{"actorlet.io/bench-cluster": e.run}
	prefix := fmt.Sprintf("bench-cl-%s-", e.run)
	agents := make([]*agent.Agent, k)
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	heap0 := liveHeap()
	t0 := time.Now()
	defer func() { stopAll(agents) }()
	err = parallel(ctx, 8, idx, func(ctx context.Context, i int) error {
		a, err := startAgent(ctx, agentOpts{name: fmt.Sprintf("%s%d", prefix, i), dir: dir,
			natsURL: bb.url(), runtime: memcri.New(), labels: labels, heartbeat: 10 * time.Second, maxPods: p + 10})
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
	values, err := spec.fleetPods("cl", p, labels)
	if err != nil {
		return err
	}
	w, err := c.watchStatusFollowingLeaders(ctx, statusFilter("*", benchNamespace))
	if err != nil {
		return err
	}
	defer w.stop()
	total := k * p
	m0, b0 := bb.varz()
	t1 := time.Now()
	keys := keysOf(values)
	half := len(keys) / 2
	if err := c.putRetrying(ctx, values, keys[:half]); err != nil {
		return err
	}
	if topo.kill {
		killed := bb.killLeader("KV_" + wire.DesiredBucket)
		fmt.Printf("  killed %s, the leader of KV_%s\n", killed, wire.DesiredBucket)
	}
	if err := c.putRetrying(ctx, values, keys[half:]); err != nil {
		return err
	}
	err = waitFor(ctx, 30*time.Minute, fmt.Sprintf("%d pods Running", total), func() bool { return w.countKeys(prefix, isRunning) >= total })
	if err != nil {
		return err
	}
	took := time.Since(t1)
	m1, b1 := bb.varz()
	var lat durations
	for key, ps := range w.snapshot() {
		if strings.HasPrefix(key, prefix) && !ps.running.IsZero() {
			lat = append(lat, ps.running.Sub(t1))
		}
	}
	sec := func(d time.Duration) string { return fmt.Sprintf("%.1f", d.Seconds()) }
	t.add(topo.name, total, sec(startup), sec(took), sec(lat.percentile(50)), sec(lat.percentile(99)),
		fmt.Sprintf("%.0f", float64(m1-m0)/float64(total)), fmt.Sprintf("%.1f", float64(b1-b0)/float64(total)/1024),
		fmt.Sprintf("%.3f", idle/float64(k)), fmt.Sprintf("%.1f", heapPerAgent))
	return nil
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
