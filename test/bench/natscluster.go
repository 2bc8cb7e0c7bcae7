package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/actorlet/actorlet/bus"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/messages/wire/busauth"
)

// benchBus is one or more nats-servers, each a child process of the
// harness (natsChild), authenticated as docs/security.md sets a bus up:
// every server includes the authority's server.conf (operator JWT,
// system account, memory resolver). With more than one server they form
// a JetStream cluster. The harness is the operator (admin credentials);
// every agent gets its own node credentials.
type benchBus struct {
	auth    *busauth.Authority
	servers []*natsProc // nil once killed
	all     []*natsProc // every server started, killed ones too
}

func startBenchBus(dir string, n int, profile string) (*benchBus, error) {
	auth, err := busauth.Init(filepath.Join(dir, "auth"))
	if err != nil {
		return nil, fmt.Errorf("bus authority: %w", err)
	}
	admin, err := auth.IssueAdmin("bench-operator")
	if err != nil {
		return nil, err
	}
	if err := busauth.WriteCreds(filepath.Join(auth.Dir, busauth.AdminCredsFile), admin); err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "nats-server.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("include %q\n", filepath.Join("auth", busauth.ServerConfFile))), 0o600); err != nil {
		return nil, err
	}
	procs, err := startNATSProcs(dir, conf, n, profile)
	if err != nil {
		return nil, err
	}
	return &benchBus{auth: auth, servers: procs, all: append([]*natsProc(nil), procs...)}, nil
}

func (b *benchBus) url() string {
	var urls []string
	for _, s := range b.servers {
		if s != nil {
			urls = append(urls, s.clientURL())
		}
	}
	return strings.Join(urls, ",")
}

func (b *benchBus) adminCreds() string { return filepath.Join(b.auth.Dir, busauth.AdminCredsFile) }

// connectOperator opens the harness's operator connection and bootstraps
// the protocol with replicas (retrying while JetStream elects its first
// meta leader), as `actorletctl bootstrap` does.
func (b *benchBus) connectOperator(ctx context.Context, replicas int) (*client, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	conn, err := bus.Connect(ctx, bus.Options{URL: b.url(), CredsFile: b.adminCreds(), Name: "actorlet-bench-operator"})
	if err != nil {
		return nil, err
	}
	for {
		err = conn.EnsureProtocolWith(ctx, wire.ProtocolSettings{Replicas: replicas})
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond) // "no suitable peers" until every server joined
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("bootstrap the bus with %d replicas: %w", replicas, err)
	}
	return openClient(ctx, conn)
}

// provision does what `actorletctl node add` does for node: its consumers
// (desired, status, ConfigMaps, Secrets) and its .creds file, whose path
// it returns.
func (b *benchBus) provision(ctx context.Context, op *client, node string) (string, error) {
	if err := busauth.EnsureNodeConsumers(ctx, op.conn.JS, node); err != nil {
		return "", fmt.Errorf("provision node %s: %w", node, err)
	}
	if err := busauth.EnsureNodeObjectConsumers(ctx, op.conn.JS, node); err != nil {
		return "", fmt.Errorf("provision node %s (objects): %w", node, err)
	}
	creds, err := b.auth.IssueNode(node)
	if err != nil {
		return "", err
	}
	p := b.auth.NodeCredsPath(node)
	return p, busauth.WriteCreds(p, creds)
}

func (b *benchBus) stop() {
	for _, s := range b.servers {
		if s != nil {
			s.stop()
		}
	}
}

// killLeader shuts down the server leading stream, as the operator's
// connection op sees it; it returns its name.
func (b *benchBus) killLeader(ctx context.Context, op *client, stream string) (string, error) {
	st, err := op.conn.JS.Stream(ctx, stream)
	if err != nil {
		return "", fmt.Errorf("find the leader of %s: %w", stream, err)
	}
	info := st.CachedInfo()
	if info.Cluster == nil || info.Cluster.Leader == "" {
		return "", fmt.Errorf("%s has no leader", stream)
	}
	for i, s := range b.servers {
		if s != nil && s.name == info.Cluster.Leader {
			s.stop()
			b.servers[i] = nil
			return s.name, nil
		}
	}
	return "", fmt.Errorf("%s is led by %s, not a server of this bus", stream, info.Cluster.Leader)
}

// cpu is the CPU time of every server of the bus so far, killed ones
// included.
func (b *benchBus) cpu() time.Duration {
	var sum time.Duration
	for _, s := range b.all {
		sum += s.cpu()
	}
	return sum
}
