package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/actorlet/actorlet/bus"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/messages/wire/busauth"
)

// benchBus is one or more in-process nats-servers, authenticated as
// docs/security.md sets a bus up: every server includes the authority's
// server.conf (operator JWT, system account, memory resolver). With more
// than one server they form a JetStream cluster. The harness is the
// operator (admin credentials); every agent gets its own node credentials.
type benchBus struct {
	auth    *busauth.Authority
	servers []*server.Server // nil once killed
}

func startBenchBus(dir string, n int) (*benchBus, error) {
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
	b := &benchBus{auth: auth}
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
		o, err := server.ProcessConfigFile(conf)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", conf, err)
		}
		o.ServerName, o.Host, o.Port = fmt.Sprintf("bench-%d", i+1), "127.0.0.1", -1
		o.JetStream, o.StoreDir = true, filepath.Join(dir, fmt.Sprintf("nats-%d", i+1))
		o.NoSigs, o.NoLog, o.MaxPayload = true, true, 8<<20
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
		if s != nil {
			urls = append(urls, s.ClientURL())
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
			s.Shutdown()
			s.WaitForShutdown()
		}
	}
}

// killLeader shuts down the server leading stream; it returns its name.
func (b *benchBus) killLeader(stream string) string {
	for i, s := range b.servers {
		if s != nil && s.JetStreamIsStreamLeader(b.auth.AccountPublicKey(), stream) {
			name := s.Name()
			s.Shutdown()
			s.WaitForShutdown()
			b.servers[i] = nil
			return name
		}
	}
	return ""
}
