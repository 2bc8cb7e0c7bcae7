package fleet

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/messages/wire/busauth"
)

// TestNodeAddAndRevoke provisions a node with `actorletctl node add`, runs
// an agent with the credentials it wrote, and cuts the node off live with
// `actorletctl node revoke` (no server restart or reload).
func TestNodeAddAndRevoke(t *testing.T) {
	f := newFleet(t)
	dir := f.srv.Auth.Dir
	creds := filepath.Join(t.TempDir(), "n-prov.creds")
	out := f.mustCtl(t, "node", "add", "n-prov", "--auth-dir", dir, "--out", creds)
	// Each step is announced (it may wait on the bus), then the result.
	for _, want := range []string{"node/n-prov: creating its consumers", "node/n-prov: creating the ConfigMap and Secret buckets",
		"node/n-prov: issuing its credentials", "node/n-prov provisioned: credentials in " + creds} {
		if !strings.Contains(out, want) {
			t.Fatalf("node add printed %q, want %q", out, want)
		}
	}
	disconnected := make(chan struct{}, 1)
	nc, err := bustest.Dial(t, f.srv, nats.UserCredentials(creds), nats.CustomInboxPrefix(busauth.NodeInboxPrefix("n-prov")),
		nats.DisconnectErrHandler(func(*nats.Conn, error) {
			select {
			case disconnected <- struct{}{}:
			default:
			}
		}))
	if err != nil {
		t.Fatalf("connect with the creds node add wrote: %v", err)
	}
	if _, err := nc.Request("$JS.API.CONSUMER.INFO."+busauth.DesiredStream+".actorlet-node-n-prov", nil, 5*time.Second); err != nil {
		t.Fatalf("the node reads its provisioned consumer: %v", err)
	}
	out = f.mustCtl(t, "node", "revoke", "n-prov", "--auth-dir", dir)
	if !strings.Contains(out, "revoked") {
		t.Fatalf("node revoke printed %q", out)
	}
	select {
	case <-disconnected:
	case <-time.After(waitFor):
		t.Fatal("the revoked node is still connected")
	}
	if _, err := bustest.Dial(t, f.srv, nats.UserCredentials(creds)); err == nil {
		t.Fatal("revoked credentials accepted")
	}
}
