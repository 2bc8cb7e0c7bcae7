package bustest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/actorlet/actorlet/bus"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/messages/wire/busauth"
)

// clusterReadyTimeout bounds the wait for a cluster to elect its JetStream
// meta leader (two shared cores: generous).
const clusterReadyTimeout = 30 * time.Second

// Cluster is a JetStream cluster of in-process nats-servers on loopback,
// as nats-server's own tests run one: random client and route ports (kept
// across restarts), every server routing to every other, a store directory
// each. Servers can be stopped and started again by index.
type Cluster struct {
	Name string
	// Auth is the authority every server trusts (ClusterOptions.Secure).
	Auth *busauth.Authority
	// account is where the protocol's streams live: the authority's
	// account, or the global one without Secure.
	account string

	t       testing.TB
	mu      sync.Mutex
	servers []*server.Server // nil while stopped
	opts    []*server.Options
}

// ClusterOptions are the knobs of StartClusterWith.
type ClusterOptions struct {
	// Domain is the cluster's JetStream domain (a hub for edge nodes).
	Domain string
	// Leaf opens a leaf-node listener on every server (random port). The
	// servers do not advertise their leaf URLs to leaf nodes, so a leaf node
	// only ever uses the URLs it was given (a test can cut its link).
	Leaf bool
	// Secure runs every server as docs/security.md configures one: the
	// configuration includes the authority's server.conf (operator JWT,
	// system account, memory resolver). Connect then uses admin
	// credentials; NodeCreds provisions a node.
	Secure bool
}

// StartCluster starts n servers and waits until JetStream has a meta
// leader. Everything is shut down by t.Cleanup.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	return StartClusterWith(t, n, ClusterOptions{})
}

// StartClusterWith is StartCluster with a JetStream domain and leaf-node
// listeners.
func StartClusterWith(t testing.TB, n int, co ClusterOptions) *Cluster {
	t.Helper()
	c := &Cluster{Name: "actorlet-test", t: t, servers: make([]*server.Server, n), opts: make([]*server.Options, n),
		account: server.DEFAULT_GLOBAL_ACCOUNT}
	var secureConf string
	if co.Secure {
		secureConf = c.initSecure()
	}
	// JetStream in a cluster needs its routes configured at start: pick the
	// route ports first, then give every server the routes of the others.
	routePorts := make([]int, n)
	for i := range routePorts {
		routePorts[i] = freePort(t)
	}
	for i := 0; i < n; i++ {
		o := &server.Options{}
		if secureConf != "" {
			var err error
			if o, err = server.ProcessConfigFile(secureConf); err != nil {
				t.Fatalf("load %s: %v", secureConf, err)
			}
		}
		o.ServerName = fmt.Sprintf("S-%d", i+1)
		o.Host, o.Port = "127.0.0.1", -1
		o.JetStream, o.StoreDir = true, t.TempDir()
		o.NoLog, o.NoSigs = true, true
		o.Cluster = server.ClusterOpts{Name: c.Name, Host: "127.0.0.1", Port: routePorts[i]}
		o.JetStreamDomain = co.Domain
		if co.Leaf {
			o.LeafNode = server.LeafNodeOpts{Host: "127.0.0.1", Port: freePort(t), NoAdvertise: true}
		}
		for j, p := range routePorts {
			if j != i {
				o.Routes = append(o.Routes, &url.URL{Scheme: "nats-route", Host: fmt.Sprintf("127.0.0.1:%d", p)})
			}
		}
		c.opts[i] = o
	}
	t.Cleanup(c.shutdown) // after the store dirs' cleanups: runs before them
	var wg sync.WaitGroup
	for i, o := range c.opts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := c.run(o)
			if s == nil {
				return // run reported why
			}
			// Keep the client port the server got, for restarts.
			o.Port = s.Addr().(*net.TCPAddr).Port
			c.mu.Lock()
			c.servers[i] = s
			c.mu.Unlock()
		}()
	}
	wg.Wait()
	for _, s := range c.servers {
		if s == nil {
			t.FailNow() // run reported why
		}
	}
	c.WaitMetaLeader()
	return c
}

// initSecure creates the authority with its admin and system credentials
// and a configuration file that includes its server.conf, as
// docs/security.md shows; it returns that file's path.
func (c *Cluster) initSecure() string {
	c.t.Helper()
	root := c.t.TempDir()
	dir := filepath.Join(root, "auth")
	a := newAuthority(c.t, dir)
	c.Auth, c.account = a, a.AccountPublicKey()
	conf := filepath.Join(root, "nats-server.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("include %q\n", filepath.Join("auth", busauth.ServerConfFile))), 0o600); err != nil {
		c.t.Fatal(err)
	}
	return conf
}

// AdminCreds is the operator-role credentials file of a Secure cluster
// (empty otherwise).
func (c *Cluster) AdminCreds() string {
	if c.Auth == nil {
		return ""
	}
	return filepath.Join(c.Auth.Dir, busauth.AdminCredsFile)
}

// NodeCreds provisions node on a Secure cluster as `actorletctl node add`
// does (the node's consumers, on buckets that must exist; its
// credentials) and returns the path of its .creds file.
func (c *Cluster) NodeCreds(t testing.TB, node string) string {
	t.Helper()
	c.provision(t, "provision-"+node, busauth.EnsureNodeConsumers, node, "node "+node)
	creds, err := c.Auth.IssueNode(node)
	return saveCreds(t, c.Auth.NodeCredsPath(node), creds, err)
}

// LeafCreds issues the credentials of an edge node's leaf uplink on a
// Secure cluster as `actorletctl node add NODE --edge` does: the hub's
// consumers the edge's copies source (the protocol's buckets must exist),
// and an uplink user pinned to the edge's own subjects
// (busauth.EdgeUplinkPermissions; docs/fleet.md).
func (c *Cluster) LeafCreds(t testing.TB, node string) string {
	t.Helper()
	c.provision(t, "provision-edge-"+node, busauth.EnsureEdgeConsumers, node, "edge "+node+" on the hub")
	creds, err := c.Auth.IssueEdgeUplink(node, c.opts[0].JetStreamDomain)
	return saveCreds(t, filepath.Join(c.Auth.Dir, "leaf-"+node+".creds"), creds, err)
}

// provision creates node's consumers with ensure, through an admin
// connection named conn; what names them in the failure.
func (c *Cluster) provision(t testing.TB, conn string, ensure func(context.Context, jetstream.JetStream, string) error, node, what string) {
	t.Helper()
	admin := c.Connect(t, conn)
	ctx, cancel := context.WithTimeout(context.Background(), clusterReadyTimeout)
	defer cancel()
	if err := ensure(ctx, admin.JS, node); err != nil {
		t.Fatalf("provision %s: %v", what, err)
	}
}

// run starts a server; nil (after reporting with Errorf) if it failed.
func (c *Cluster) run(o *server.Options) *server.Server {
	s, err := server.NewServer(o.Clone())
	if err != nil {
		c.t.Errorf("create nats-server %s: %v", o.ServerName, err)
		return nil
	}
	go s.Start()
	if !s.ReadyForConnections(clusterReadyTimeout) {
		s.Shutdown()
		c.t.Errorf("nats-server %s not ready", o.ServerName)
		return nil
	}
	return s
}

// freePort is a loopback TCP port free a moment ago, below the kernel's
// ephemeral range (ListenStable).
func freePort(t testing.TB) int {
	t.Helper()
	l := ListenStable(t)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// ListenStable listens on a loopback TCP port below the kernel's ephemeral
// range, for a port a test names before it starts a server and reuses
// when it restarts it: a port of the ephemeral range can be taken
// meanwhile by any outgoing connection on the machine (a restart failed
// with "address already in use" under a loaded make test). The caller
// closes the listener when the server is about to take the port.
func ListenStable(t testing.TB) net.Listener {
	t.Helper()
	lo := ephemeralLow()
	for range 100 {
		port := lo - 1 - rand.IntN(min(lo-1024, 16384))
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			return l
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	return l
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// default when it cannot be read).
func ephemeralLow() int {
	lo := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 2048 {
				lo = n
			}
		}
	}
	return lo
}

func (c *Cluster) shutdown() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range c.servers {
		if s != nil {
			s.Shutdown()
			s.WaitForShutdown()
			c.servers[i] = nil
		}
	}
}

// URL is every server's client URL, comma-separated: what a node is given.
func (c *Cluster) URL() string {
	urls := make([]string, len(c.opts))
	for i, o := range c.opts {
		urls[i] = fmt.Sprintf("nats://127.0.0.1:%d", o.Port)
	}
	return strings.Join(urls, ",")
}

// LeafAddr is server i's leaf-node address (host:port).
func (c *Cluster) LeafAddr(i int) string { return fmt.Sprintf("127.0.0.1:%d", c.opts[i].LeafNode.Port) }

// ServerURL is the client URL of server i (running or not).
func (c *Cluster) ServerURL(i int) string { return fmt.Sprintf("nats://127.0.0.1:%d", c.opts[i].Port) }

// Size is the number of servers, running or not.
func (c *Cluster) Size() int { return len(c.opts) }

// Server is server i, or nil while it is stopped.
func (c *Cluster) Server(i int) *server.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.servers[i]
}

// ServerName is the name of server i (running or not).
func (c *Cluster) ServerName(i int) string { return c.opts[i].ServerName }

// Stop shuts server i down, as a crash or a stopped VM would.
func (c *Cluster) Stop(i int) {
	c.t.Helper()
	c.mu.Lock()
	s := c.servers[i]
	c.servers[i] = nil
	c.mu.Unlock()
	if s != nil {
		s.Shutdown()
		s.WaitForShutdown()
	}
}

// Start starts server i again, same name, ports and store.
func (c *Cluster) Start(i int) {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.servers[i] != nil {
		return
	}
	if c.servers[i] = c.run(c.opts[i]); c.servers[i] == nil {
		c.t.FailNow()
	}
}

// StreamLeader is the index of the server leading stream (in the default
// account), or -1 when no running server leads it.
func (c *Cluster) StreamLeader(stream string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range c.servers {
		if s != nil && s.JetStreamIsStreamLeader(c.account, stream) {
			return i
		}
	}
	return -1
}

// ServerOf is the index of the running server that has a client
// connection named name, or -1.
func (c *Cluster) ServerOf(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range c.servers {
		if s == nil {
			continue
		}
		cz, err := s.Connz(&server.ConnzOptions{Limit: 10000})
		if err != nil {
			continue
		}
		for _, ci := range cz.Conns {
			if ci.Name == name {
				return i
			}
		}
	}
	return -1
}

// WaitMetaLeader waits until a running server is the JetStream meta leader,
// every running server is current, and the leader knows every running
// server as a peer it can place replicas on (until then creating an R3
// stream fails with "no suitable peers for placement").
func (c *Cluster) WaitMetaLeader() {
	c.t.Helper()
	deadline := time.Now().Add(clusterReadyTimeout)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		leader, current, running, peers := false, 0, 0, 0
		for _, s := range c.servers {
			if s == nil {
				continue
			}
			running++
			if s.JetStreamIsLeader() {
				leader = true
				peers = len(s.JetStreamClusterPeers())
			}
			if s.JetStreamIsCurrent() {
				current++
			}
		}
		c.mu.Unlock()
		if leader && current == running && peers >= running {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("JetStream cluster %s has no meta leader after %s", c.Name, clusterReadyTimeout)
}

// WaitHealthy waits until every running server reports itself healthy
// (its /healthz: the meta group, and every stream and consumer replica
// assigned to it, current). A test restarting servers one at a time
// waits for it before each stop: a server stopped while another is still
// catching up can take the last current replica of a stream away, and
// the stream then has no quorum until the other has caught up.
func (c *Cluster) WaitHealthy() {
	c.t.Helper()
	deadline := time.Now().Add(clusterReadyTimeout)
	var why string
	for time.Now().Before(deadline) {
		why = ""
		c.mu.Lock()
		for i, s := range c.servers {
			if s == nil {
				continue
			}
			if h := s.Healthz(nil); h.StatusCode != http.StatusOK {
				why = fmt.Sprintf("%s: %s", c.opts[i].ServerName, h.Error)
				break
			}
		}
		c.mu.Unlock()
		if why == "" {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("JetStream cluster %s not healthy after %s: %s", c.Name, clusterReadyTimeout, why)
}

// WaitStreamLeader waits until stream has a leader among the running
// servers and returns its index.
func (c *Cluster) WaitStreamLeader(stream string) int {
	c.t.Helper()
	deadline := time.Now().Add(clusterReadyTimeout)
	for time.Now().Before(deadline) {
		if i := c.StreamLeader(stream); i >= 0 {
			return i
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("stream %s has no leader after %s", stream, clusterReadyTimeout)
	return -1
}

// Connect opens a bus.Conn to every server of the cluster, closed by
// t.Cleanup.
func (c *Cluster) Connect(t testing.TB, name string) *bus.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := bus.Connect(ctx, bus.Options{URL: c.URL(), CredsFile: c.AdminCreds(), Name: name})
	if err != nil {
		t.Fatalf("connect to the test cluster: %v", err)
	}
	t.Cleanup(conn.Close)
	return conn
}

// ConnectWithProtocol is Connect followed by EnsureProtocolWith replicas.
func (c *Cluster) ConnectWithProtocol(t testing.TB, name string, replicas int) *bus.Conn {
	t.Helper()
	conn := c.Connect(t, name)
	ctx, cancel := context.WithTimeout(context.Background(), clusterReadyTimeout)
	defer cancel()
	if err := conn.EnsureProtocolWith(ctx, wire.ProtocolSettings{Replicas: replicas}); err != nil {
		t.Fatalf("ensure protocol with %d replicas: %v", replicas, err)
	}
	return conn
}

// StreamLastSeq is the last sequence of stream as server i stores it (its
// own replica, leader or not); ok is false when the server is stopped or
// holds no replica.
func (c *Cluster) StreamLastSeq(i int, stream string) (seq uint64, ok bool) {
	s := c.Server(i)
	if s == nil {
		return 0, false
	}
	ad, err := s.JszAccount(&server.JSzOptions{Account: c.account, Streams: true})
	if err != nil {
		return 0, false
	}
	for _, sd := range ad.Streams {
		if sd.Name == stream {
			return sd.State.LastSeq, true
		}
	}
	return 0, false
}

// LeafNodes is the number of leaf-node connections on the running servers.
func (c *Cluster) LeafNodes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, s := range c.servers {
		if s != nil {
			n += s.NumLeafNodes()
		}
	}
	return n
}

// ConsumerLeader is the index of the server leading consumer of stream,
// or -1 when no running server leads it.
func (c *Cluster) ConsumerLeader(stream, consumer string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range c.servers {
		if s != nil && s.JetStreamIsConsumerLeader(c.account, stream, consumer) {
			return i
		}
	}
	return -1
}

// ConnectNode provisions node on a Secure cluster (NodeCreds) and opens a
// bus.Conn to every server as that node (its credentials and inbox
// prefix), named "node-<node>", closed by t.Cleanup.
func (c *Cluster) ConnectNode(t testing.TB, node string) *bus.Conn {
	t.Helper()
	return connectNode(t, c.URL(), c.NodeCreds(t, node), node)
}
