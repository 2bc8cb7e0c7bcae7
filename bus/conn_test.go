package bus_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/actorlet/actorlet/test/testutil"

	"github.com/nats-io/nats.go"

	"github.com/actorlet/actorlet/bus"
	"github.com/actorlet/actorlet/bus/bustest"
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestConnectEmbedded(t *testing.T) {
	ctx := testContext(t)
	c, err := bus.Connect(ctx, bus.Options{EmbeddedPort: -1, StoreDir: t.TempDir(), User: "node", Password: "s3cret"})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(c.Close)
	if !c.Embedded() || !strings.HasPrefix(c.ClientURL(), "nats://127.0.0.1:") {
		t.Fatalf("embedded=%v url=%q, want embedded on 127.0.0.1", c.Embedded(), c.ClientURL())
	}
	if err := c.EnsureProtocol(ctx); err != nil {
		t.Fatalf("EnsureProtocol on embedded server: %v", err)
	}
	// The embedded server demands the configured credentials of others too.
	if nc, err := nats.Connect(c.ClientURL()); err == nil {
		nc.Close()
		t.Fatalf("anonymous client connected to an embedded server with a password")
	}
	other, err := nats.Connect(c.ClientURL(), nats.UserInfo("node", "s3cret"))
	if err != nil {
		t.Fatalf("second client: %v", err)
	}
	defer other.Close()

	// A publish made just before Close is delivered: Close drains.
	got := make(chan struct{})
	if _, err := other.Subscribe("hello", func(*nats.Msg) { close(got) }); err != nil {
		t.Fatal(err)
	}
	if err := other.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := c.NC.Publish("hello", []byte("x")); err != nil {
		t.Fatal(err)
	}
	url := c.ClientURL()
	c.Close()
	c.Close() // idempotent
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("message published before Close was not delivered")
	}
	if !c.NC.IsClosed() {
		t.Error("connection not closed")
	}
	if nc, err := nats.Connect(url, nats.UserInfo("node", "s3cret"), nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Error("embedded server still accepts connections after Close")
	}
}

func TestConnectExternalWithUserPassword(t *testing.T) {
	srv := bustest.StartServer(t, bustest.ServerOptions{User: "actorlet", Password: "pw"})
	ctx := testContext(t)

	c, err := bus.Connect(ctx, bus.Options{URL: srv.ClientURL(), User: "actorlet", Password: "pw"})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(c.Close)
	if c.Embedded() {
		t.Error("external connection reports embedded")
	}
	if _, err := c.JS.AccountInfo(ctx); err != nil {
		t.Fatalf("JetStream over the external connection: %v", err)
	}

	_, err = bus.Connect(ctx, bus.Options{URL: srv.ClientURL(), User: "actorlet", Password: "wrong"})
	if err == nil || !strings.Contains(err.Error(), "connect to NATS at") {
		t.Fatalf("wrong password: err = %v, want a connect error", err)
	}
}

func TestReconnectNotifiesListeners(t *testing.T) {
	srv := bustest.StartServer(t, bustest.ServerOptions{})
	c := bustest.Connect(t, srv)
	var calls atomic.Int32
	cancel := c.OnReconnect(func() { calls.Add(1) })
	defer cancel()

	srv.Restart()
	testutil.Eventually(t, 15*time.Second, func() error {
		if calls.Load() == 0 || !c.NC.IsConnected() {
			return errNotYet
		}
		return nil
	})
}

func TestOptionsValidation(t *testing.T) {
	tests := []struct {
		name string
		opts bus.Options
		want string
	}{
		{"embedded needs a store", bus.Options{}, "storeDir is required"},
		{"bad port", bus.Options{StoreDir: "/x", EmbeddedPort: 70000}, "embeddedPort 70000"},
		{"token and user", bus.Options{URL: "nats://x", User: "u", Token: "t"}, "mutually exclusive"},
		{"password without user", bus.Options{URL: "nats://x", Password: "p"}, "password given without user"},
		{"cert without key", bus.Options{URL: "nats://x", TLSCert: "c"}, "tlsCert and tlsKey"},
		{"client cert on embedded", bus.Options{StoreDir: "/x", User: "u", TLSCert: "c", TLSKey: "k"}, "applies to an external server"},
		{"embedded without auth", bus.Options{StoreDir: "/x"}, "requires authentication"},
		{"embedded cert without key", bus.Options{StoreDir: "/x", User: "u", EmbeddedTLSCert: "c"}, "embeddedTLSCert and embeddedTLSKey"},
		{"leaf with url", bus.Options{URL: "nats://x", LeafURL: "nats-leaf://hub:7422"}, "leafURL applies to the embedded server"},
		{"leaf without node", bus.Options{StoreDir: "/x", User: "u", LeafURL: "nats-leaf://hub:7422"}, "edgeNode is required"},
		{"leaf url garbage", bus.Options{StoreDir: "/x", User: "u", EdgeNode: "n1", LeafURL: "::not a url"}, "leafURL"},
		{"leaf url empty list", bus.Options{StoreDir: "/x", User: "u", EdgeNode: "n1", LeafURL: " , "}, "no URL given"},
		{"hub domain with a dot", bus.Options{StoreDir: "/x", User: "u", EdgeNode: "n1", LeafURL: "nats-leaf://hub:7422", HubDomain: "a.b"}, "hubDomain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := bus.Connect(context.Background(), tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Connect error = %v, want containing %q", err, tt.want)
			}
		})
	}
}

// TestEmbeddedPortInUse: a second node on a taken client port fails with
// the address and the flag to change, as soon as the server cannot listen
// (not after the ready timeout, whose error says "not ready").
func TestEmbeddedPortInUse(t *testing.T) {
	ctx := testContext(t)
	port := testutil.ServeTCP(t, func(c net.Conn) { c.Close() })
	_, err := bus.Connect(ctx, bus.Options{EmbeddedPort: port, StoreDir: t.TempDir(), User: "node", Password: "s3cret"})
	want := fmt.Sprintf("127.0.0.1:%d is already in use", port)
	t.Log(err)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--nats-port") {
		t.Fatalf("Connect on a taken port: %v, want %q naming --nats-port", err, want)
	}
}
