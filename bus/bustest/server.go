// Package bustest runs real nats-servers for tests: in-process, JetStream
// in a test directory, on a random port, shut down by t.Cleanup.
package bustest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/actorlet/actorlet/bus"
	"github.com/actorlet/actorlet/messages/wire/busauth"
)

// ServerOptions are the knobs tests need.
type ServerOptions struct {
	// StoreDir is the JetStream directory; empty uses a new t.TempDir().
	StoreDir string
	// Port is the client port; 0 picks a random one.
	Port int
	// User and Password, when set, are required of clients.
	User, Password string
	// Secure runs the server as docs/security.md configures one: trusting
	// a new busauth authority (operator JWT, memory resolver), from a
	// configuration file. Connect then uses admin credentials; NodeCreds
	// provisions a node.
	Secure bool
	// DefaultMaxConsumers is nats-server's default_max_consumers (per
	// stream); 0 keeps the server's default (1,000).
	DefaultMaxConsumers int
}

// Server is a running test server. Restart stops it and starts a new one on
// the same port with the same store, as an operator restarting NATS would.
type Server struct {
	*server.Server
	Opts ServerOptions
	// Auth and ConfigFile are set for a Secure server.
	Auth       *busauth.Authority
	ConfigFile string
	t          testing.TB
}

// StartServer starts a nats-server with JetStream and registers its
// shutdown with t.Cleanup.
func StartServer(t testing.TB, o ServerOptions) *Server {
	t.Helper()
	if o.StoreDir == "" {
		o.StoreDir = t.TempDir()
	}
	s := &Server{Opts: o, t: t}
	if o.Secure {
		s.initSecure()
	}
	s.start()
	s.Opts.Port = s.Addr().(*net.TCPAddr).Port
	t.Cleanup(s.stop)
	return s
}

func (s *Server) start() {
	s.t.Helper()
	port := s.Opts.Port
	if port == 0 {
		port = -1
	}
	sopts := &server.Options{
		Host:      "127.0.0.1",
		Port:      port,
		JetStream: true,
		StoreDir:  s.Opts.StoreDir,
		NoLog:     true,
		NoSigs:    true,
		Username:  s.Opts.User,
		Password:  s.Opts.Password,
	}
	if s.Opts.Secure {
		sopts = s.secureOptions(port)
	}
	if s.Opts.DefaultMaxConsumers != 0 {
		sopts.JetStreamLimits.DefaultMaxConsumers = s.Opts.DefaultMaxConsumers
	}
	srv, err := server.NewServer(sopts)
	if err != nil {
		s.t.Fatalf("create nats-server: %v", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		s.t.Fatalf("nats-server on port %d not ready", port)
	}
	s.Server = srv
}

func (s *Server) stop() {
	s.Shutdown()
	s.WaitForShutdown()
}

// Restart shuts the server down and starts it again on the same port and
// store directory.
func (s *Server) Restart() {
	s.t.Helper()
	s.stop()
	s.start()
}

// Connect opens a bus.Conn to s as a client with the server's credentials,
// closed by t.Cleanup.
func Connect(t testing.TB, s *Server) *bus.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o := bus.Options{URL: s.ClientURL(), User: s.Opts.User, Password: s.Opts.Password, Name: t.Name()}
	if s.Opts.Secure {
		o.CredsFile = s.AdminCreds()
	}
	c, err := bus.Connect(ctx, o)
	if err != nil {
		t.Fatalf("connect to test nats-server: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// ConnectWithProtocol is Connect followed by EnsureProtocol.
func ConnectWithProtocol(t testing.TB, s *Server) *bus.Conn {
	t.Helper()
	c := Connect(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.EnsureProtocol(ctx); err != nil {
		t.Fatalf("ensure protocol: %v", err)
	}
	return c
}

// KeyValue returns bucket through js; a lookup error fails the test.
func KeyValue(t testing.TB, js jetstream.JetStream, bucket string) jetstream.KeyValue {
	t.Helper()
	kv, err := js.KeyValue(t.Context(), bucket)
	if err != nil {
		t.Fatalf("bucket %s: %v", bucket, err)
	}
	return kv
}
