package publish

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/actorlet/actorlet/test/testutil"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// testServer is an in-process nats-server with JetStream; restart keeps
// its port and store so clients reconnect to the same data.
type testServer struct {
	t    *testing.T
	opts server.Options
	srv  *server.Server
}

func startServer(t *testing.T) *testServer {
	t.Helper()
	return startServerWith(t, nil)
}

type serverOptions = server.Options

// startServerWith starts a server whose options tweak may change.
func startServerWith(t *testing.T, tweak func(*serverOptions)) *testServer {
	t.Helper()
	ts := &testServer{t: t, opts: server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true}}
	if tweak != nil {
		tweak(&ts.opts)
	}
	ts.start()
	ts.opts.Port = ts.srv.Addr().(*net.TCPAddr).Port
	t.Cleanup(ts.shutdown)
	return ts
}

func (ts *testServer) start() {
	ts.t.Helper()
	opts := ts.opts
	srv, err := server.NewServer(&opts)
	if err != nil {
		ts.t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		ts.t.Fatal("nats-server not ready")
	}
	ts.srv = srv
}

func (ts *testServer) shutdown() {
	if ts.srv != nil {
		ts.srv.Shutdown()
		ts.srv.WaitForShutdown()
		ts.srv = nil
	}
}

// connect returns a reconnecting client and its JetStream context.
func (ts *testServer) connect() (*nats.Conn, jetstream.JetStream) {
	ts.t.Helper()
	nc, err := nats.Connect(ts.srv.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	if err != nil {
		ts.t.Fatal(err)
	}
	ts.t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		ts.t.Fatal(err)
	}
	return nc, js
}

func createBucket(t *testing.T, js jetstream.JetStream, bucket string) jetstream.KeyValue {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket, Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatalf("create bucket %s: %v", bucket, err)
	}
	return kv
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testutil.Until(t, timeout, what, cond)
}
