package bustest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/actorlet/actorlet/bus"
	"github.com/actorlet/actorlet/messages/wire/busauth"
)

// initSecure creates the authority and the credentials a test uses.
func (s *Server) initSecure() {
	s.t.Helper()
	dir := filepath.Join(s.t.TempDir(), "auth")
	a, err := busauth.Init(dir)
	if err != nil {
		s.t.Fatalf("init authority: %v", err)
	}
	s.Auth = a
	for name, issue := range map[string]func(string) ([]byte, error){
		busauth.AdminCredsFile:  a.IssueAdmin,
		busauth.SystemCredsFile: a.IssueSystem,
	} {
		creds, err := issue(name)
		if err != nil {
			s.t.Fatalf("issue %s: %v", name, err)
		}
		if err := busauth.WriteCreds(filepath.Join(dir, name), creds); err != nil {
			s.t.Fatal(err)
		}
	}
	s.ConfigFile = filepath.Join(filepath.Dir(dir), "nats-server.conf")
}

// secureOptions writes the server configuration the way docs/security.md
// shows it (listen, jetstream, and an include of the authority's
// server.conf) and loads it as nats-server would.
func (s *Server) secureOptions(port int) *server.Options {
	s.t.Helper()
	// include paths are relative to the including file.
	conf := fmt.Sprintf("listen: 127.0.0.1:%d\njetstream: { store_dir: %q }\ninclude %q\n",
		port, s.Opts.StoreDir, filepath.Join(filepath.Base(s.Auth.Dir), busauth.ServerConfFile))
	if err := os.WriteFile(s.ConfigFile, []byte(conf), 0o600); err != nil {
		s.t.Fatal(err)
	}
	o, err := server.ProcessConfigFile(s.ConfigFile)
	if err != nil {
		s.t.Fatalf("load %s: %v", s.ConfigFile, err)
	}
	o.NoLog, o.NoSigs = true, true
	return o
}

// AdminCreds is the operator-role credentials file of a Secure server.
func (s *Server) AdminCreds() string { return filepath.Join(s.Auth.Dir, busauth.AdminCredsFile) }

// SystemCreds is the system-account credentials file of a Secure server.
func (s *Server) SystemCreds() string { return filepath.Join(s.Auth.Dir, busauth.SystemCredsFile) }

// NodeCreds provisions node on a Secure server as `actorletctl node add`
// does (protocol buckets, the node's consumers, its credentials) and
// returns the path of its .creds file.
func (s *Server) NodeCreds(t testing.TB, node string) string {
	t.Helper()
	admin := ConnectWithProtocol(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := busauth.EnsureNodeConsumers(ctx, admin.JS, node); err != nil {
		t.Fatalf("provision node %s: %v", node, err)
	}
	if err := busauth.EnsureNodeObjectConsumers(ctx, admin.JS, node); err != nil {
		t.Fatalf("provision node %s (objects): %v", node, err)
	}
	creds, err := s.Auth.IssueNode(node)
	if err != nil {
		t.Fatal(err)
	}
	p := s.Auth.NodeCredsPath(node)
	if err := busauth.WriteCreds(p, creds); err != nil {
		t.Fatal(err)
	}
	return p
}

// ConnectNode opens a bus.Conn as node (its creds and inbox prefix).
func ConnectNode(t testing.TB, s *Server, node string) *bus.Conn {
	t.Helper()
	return connectNode(t, s.ClientURL(), s.NodeCreds(t, node), node)
}

// connectNode opens a bus.Conn to url as node (creds, its inbox prefix,
// named "node-<node>"), closed by t.Cleanup.
func connectNode(t testing.TB, url, creds, node string) *bus.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := bus.Connect(ctx, bus.Options{URL: url, CredsFile: creds, InboxPrefix: busauth.NodeInboxPrefix(node), Name: "node-" + node})
	if err != nil {
		t.Fatalf("connect as node %s: %v", node, err)
	}
	t.Cleanup(c.Close)
	return c
}

// Dial opens a plain nats.Conn with opts (closed by t.Cleanup).
func Dial(t testing.TB, s *Server, opts ...nats.Option) (*nats.Conn, error) {
	t.Helper()
	nc, err := nats.Connect(s.ClientURL(), append([]nats.Option{nats.MaxReconnects(0)}, opts...)...)
	if err == nil {
		t.Cleanup(nc.Close)
	}
	return nc, err
}
