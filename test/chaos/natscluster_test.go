package chaos

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/actorlet/actorlet/bus"
	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/messages/wire/busauth"
	"github.com/actorlet/actorlet/test/testutil"
)

// serverReadyTimeout bounds the wait for a started nats-server to report
// itself healthy (JetStream current), two shared cores considered.
const serverReadyTimeout = 60 * time.Second

// natsCluster is a JetStream cluster of real nats-server processes on
// loopback, authenticated as docs/security.md sets a bus up (every server
// includes the authority's server.conf). Every route and every agent's
// client connection goes through a testutil.Proxy, so the harness can cut
// and slow links: server i dials server j through routes[i][j]; agents
// reach server i through clients[i]. Servers advertise neither their
// client URLs to clients nor a reachable route address to each other, so
// no connection bypasses the proxies.
type natsCluster struct {
	t    testing.TB
	bin  string
	dir  string
	auth *busauth.Authority

	clientPorts, routePorts, httpPorts, leafPorts []int
	clients                                       []*testutil.Proxy
	routes                                        [][]*testutil.Proxy

	mu    sync.Mutex
	procs []*serverProc // nil while stopped
	logs  []*os.File
}

type serverProc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// clusterAttempts bounds the starts of a fresh cluster: a port picked
// free can be taken by another process before its server binds it (the
// machine runs other tests), and the server then exits at once.
const clusterAttempts = 3

// startCluster starts n servers of bin and bootstraps the protocol with n
// replicas, as `actorletctl auth init` and `bootstrap --replicas n` do.
// t.Cleanup kills every server.
func startCluster(t testing.TB, bin, dir string, n int) *natsCluster {
	t.Helper()
	auth, err := busauth.Init(filepath.Join(dir, "auth"))
	if err != nil {
		t.Fatalf("auth init: %v", err)
	}
	admin, err := auth.IssueAdmin("chaos-operator")
	if err != nil {
		t.Fatal(err)
	}
	if err := busauth.WriteCreds(filepath.Join(auth.Dir, busauth.AdminCredsFile), admin); err != nil {
		t.Fatal(err)
	}
	for attempt := 1; ; attempt++ {
		c := &natsCluster{t: t, bin: bin, dir: dir, auth: auth, procs: make([]*serverProc, n), logs: make([]*os.File, n)}
		t.Cleanup(c.stopAll)
		err := c.boot(n)
		if err == nil {
			c.bootstrap(n)
			return c
		}
		c.stopAll()
		if attempt == clusterAttempts {
			t.Fatalf("start a %d-server cluster (%d attempts): %v", n, attempt, err)
		}
		t.Logf("start a %d-server cluster, attempt %d: %v; trying again on other ports", n, attempt, err)
		for i := range n {
			_ = os.RemoveAll(c.storeDir(i))
		}
	}
}

// boot picks the ports, starts the proxies and the servers, and waits
// until every server is healthy.
func (c *natsCluster) boot(n int) error {
	// Every port is held until all are picked and the proxies listen, so
	// no two of them (nor a proxy) get the same one.
	var held []net.Listener
	pick := func() int {
		// Below the ephemeral range: a restarted server takes its port
		// again, which an outgoing connection may have taken meanwhile.
		l := bustest.ListenStable(c.t)
		held = append(held, l)
		return l.Addr().(*net.TCPAddr).Port
	}
	for range n {
		c.clientPorts = append(c.clientPorts, pick())
		c.routePorts = append(c.routePorts, pick())
		c.httpPorts = append(c.httpPorts, pick())
		c.leafPorts = append(c.leafPorts, pick())
	}
	c.routes = make([][]*testutil.Proxy, n)
	for i := range n {
		c.clients = append(c.clients, testutil.NewProxy(c.t, fmt.Sprintf("127.0.0.1:%d", c.clientPorts[i])))
		c.routes[i] = make([]*testutil.Proxy, n)
		for j := range n {
			if j != i {
				c.routes[i][j] = testutil.NewProxy(c.t, fmt.Sprintf("127.0.0.1:%d", c.routePorts[j]))
			}
		}
	}
	for _, l := range held {
		l.Close()
	}
	for i := range n {
		if err := c.writeConfig(i); err != nil {
			return err
		}
	}
	for i := range n {
		if err := c.Start(i); err != nil {
			return err
		}
	}
	for i := range n {
		if err := c.waitHealthy(i); err != nil {
			return err
		}
	}
	return nil
}

func (c *natsCluster) storeDir(i int) string {
	return filepath.Join(c.dir, fmt.Sprintf("store-%d", i+1))
}

func (c *natsCluster) conf(i int) string {
	return filepath.Join(c.dir, fmt.Sprintf("nats-%d.conf", i+1))
}

// Name is server i's name.
func (c *natsCluster) Name(i int) string { return fmt.Sprintf("chaos-%d", i+1) }

func (c *natsCluster) writeConfig(i int) error {
	var routes []string
	for j, p := range c.routes[i] {
		if j != i {
			routes = append(routes, fmt.Sprintf("    nats-route://%s", p.Addr()))
		}
	}
	// As docs/fleet.md deploys a fleet's cluster: JetStream domain hub and
	// a leaf-node listener for edge nodes (none joins here, but the
	// listener changes how nats-server treats pull requests). Route
	// advertise: port 1 of loopback, where nothing listens (and no user
	// may bind): a server that learns of another through gossip cannot
	// reach it past the proxies.
	conf := fmt.Sprintf(`server_name: %s
listen: 127.0.0.1:%d
http: 127.0.0.1:%d
jetstream { store_dir: %q, domain: hub }
leafnodes { listen: 127.0.0.1:%d, no_advertise: true }
cluster {
  name: chaos
  listen: 127.0.0.1:%d
  advertise: "127.0.0.1:1"
  no_advertise: true
  connect_retries: 1000000
  routes: [
%s
  ]
}
include %q
`, c.Name(i), c.clientPorts[i], c.httpPorts[i], c.storeDir(i), c.leafPorts[i], c.routePorts[i],
		strings.Join(routes, "\n"), filepath.Join("auth", busauth.ServerConfFile))
	return os.WriteFile(c.conf(i), []byte(conf), 0o600)
}

// Start starts server i (its store and ports kept from an earlier run).
func (c *natsCluster) Start(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.procs[i] != nil {
		return nil
	}
	if c.logs[i] == nil {
		f, err := os.OpenFile(filepath.Join(c.dir, c.Name(i)+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		c.logs[i] = f
	}
	cmd := exec.Command(c.bin, "-c", c.conf(i))
	cmd.Stdout, cmd.Stderr = c.logs[i], c.logs[i]
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start nats-server %s: %w", c.Name(i), err)
	}
	p := &serverProc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	c.procs[i] = p
	return nil
}

// Signal sends sig to server i and waits until it has exited (SIGKILL
// after 30 s).
func (c *natsCluster) Signal(i int, sig syscall.Signal) {
	c.mu.Lock()
	p := c.procs[i]
	c.procs[i] = nil
	c.mu.Unlock()
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Running reports whether server i runs.
func (c *natsCluster) Running(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.procs[i] != nil
}

func (c *natsCluster) stopAll() {
	for i := range c.procs {
		c.Signal(i, syscall.SIGKILL)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, f := range c.logs {
		if f != nil {
			f.Close()
			c.logs[i] = nil
		}
	}
	for i, p := range c.clients {
		p.Close()
		for _, r := range c.routes[i] {
			if r != nil {
				r.Close()
			}
		}
	}
}

// waitHealthy waits until server i's /healthz answers 200 (connected to
// the cluster, JetStream current).
func (c *natsCluster) waitHealthy(i int) error {
	deadline := time.Now().Add(serverReadyTimeout)
	url := fmt.Sprintf("http://127.0.0.1:%d/healthz", c.httpPorts[i])
	hc := http.Client{Timeout: 2 * time.Second}
	var last error
	for time.Now().Before(deadline) {
		c.mu.Lock()
		p := c.procs[i]
		c.mu.Unlock()
		if p == nil {
			return fmt.Errorf("nats-server %s is not running", c.Name(i))
		}
		select {
		case <-p.done:
			return fmt.Errorf("nats-server %s exited: %s (its log: %s)", c.Name(i), p.cmd.ProcessState, c.lastLogLine(i))
		default:
		}
		resp, err := hc.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("healthz %s", resp.Status)
		}
		last = err
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("nats-server %s not healthy within %s: %v", c.Name(i), serverReadyTimeout, last)
}

// lastLogLine is the last line server i logged.
func (c *natsCluster) lastLogLine(i int) string {
	return lastLine(filepath.Join(c.dir, c.Name(i)+".log"))
}

// lastLine is the last line of the file at path.
func lastLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return lines[len(lines)-1]
}

// DirectURL is every server's own client URL (the operator's connection,
// which no fault cuts; partitions still leave it on one side).
func (c *natsCluster) DirectURL() string {
	var urls []string
	for _, p := range c.clientPorts {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	return strings.Join(urls, ",")
}

// AgentURL is every server's client proxy: what an agent is given.
func (c *natsCluster) AgentURL() string {
	var urls []string
	for _, p := range c.clients {
		urls = append(urls, "nats://"+p.Addr())
	}
	return strings.Join(urls, ",")
}

func (c *natsCluster) adminCreds() string { return filepath.Join(c.auth.Dir, busauth.AdminCredsFile) }

// connectOperator opens an operator connection (admin credentials) to
// every server.
func (c *natsCluster) connectOperator(name string) *bus.Conn {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := bus.Connect(ctx, bus.Options{URL: c.DirectURL(), CredsFile: c.adminCreds(), Name: name})
	if err != nil {
		c.t.Fatalf("connect as the operator: %v", err)
	}
	c.t.Cleanup(conn.Close)
	return conn
}

// bootstrap does what `actorletctl bootstrap --replicas n` does, retrying
// while the cluster has no suitable peers yet.
func (c *natsCluster) bootstrap(n int) {
	c.t.Helper()
	op := c.connectOperator("chaos-bootstrap")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var err error
	for ctx.Err() == nil {
		if _, err = wire.Bootstrap(ctx, op.JS, wire.ProtocolSettings{Replicas: n}); err == nil {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	c.t.Fatalf("bootstrap --replicas %d: %v", n, err)
}

// addNode does what `actorletctl node add` does and returns the path of
// the node's .creds file.
func (c *natsCluster) addNode(op *bus.Conn, node string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := busauth.EnsureNodeConsumers(ctx, op.JS, node); err != nil {
		return "", fmt.Errorf("node add %s: %w", node, err)
	}
	if err := wire.EnsureObjectBuckets(ctx, op.JS); err != nil {
		return "", fmt.Errorf("node add %s: object buckets: %w", node, err)
	}
	if err := busauth.EnsureNodeObjectConsumers(ctx, op.JS, node); err != nil {
		return "", fmt.Errorf("node add %s: object consumers: %w", node, err)
	}
	creds, err := c.auth.IssueNode(node)
	if err != nil {
		return "", err
	}
	p := c.auth.NodeCredsPath(node)
	return p, busauth.WriteCreds(p, creds)
}

// isolate cuts every route between a server of one group and a server
// outside it (groups: server indexes).
func (c *natsCluster) partition(groups ...[]int) {
	side := map[int]int{}
	for g, members := range groups {
		for _, i := range members {
			side[i] = g
		}
	}
	for i := range c.routes {
		for j, p := range c.routes[i] {
			if p != nil && side[i] != side[j] {
				p.Cut()
			}
		}
	}
}

// slow delays every link of server i (its routes both ways and its client
// proxy) by d; 0 restores them.
func (c *natsCluster) slow(i int, d time.Duration) {
	c.clients[i].SetDelay(d)
	for j := range c.routes {
		if j == i {
			continue
		}
		c.routes[i][j].SetDelay(d)
		c.routes[j][i].SetDelay(d)
	}
}

// heal restores every link: no cut, no delay.
func (c *natsCluster) heal() {
	for i := range c.routes {
		c.clients[i].Restore()
		c.clients[i].SetDelay(0)
		for _, p := range c.routes[i] {
			if p != nil {
				p.Restore()
				p.SetDelay(0)
			}
		}
	}
}
