package recovery

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/test/testutil"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/actorlet/actorlet/cmd/actorlet/agent"
	"github.com/actorlet/actorlet/cmd/actorlet/bus/bustest"
)

// A static pod whose manifest was removed while the agent was stopped does
// not stay listed: the restarted agent prunes its status entry.
func TestStaticPodRemovedWhileAgentStoppedIsNotListed(t *testing.T) {
	srv := bustest.StartServer(t, bustest.ServerOptions{})
	conn := bustest.ConnectWithProtocol(t, srv)
	rt := startRuntime(t)
	manifests := t.TempDir()
	manifest := filepath.Join(manifests, "web.yaml")
	if err := os.WriteFile(manifest, []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: app\n    image: local/sleep\n    command: [sleep, \"3600\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := agent.DefaultConfig()
	cfg.NodeName, cfg.RootDir, cfg.HealthzPort = "st1", t.TempDir(), 0
	cfg.RelistPeriod = 200 * time.Millisecond
	cfg.NATS.URL = srv.ClientURL()
	cfg.Runtime = rt
	cfg.PodManifestPath = manifests
	start := func() *agent.Agent {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		a, err := agent.Start(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(a.Stop)
		return a
	}
	status, err := conn.JS.KeyValue(context.Background(), wire.StatusBucket)
	if err != nil {
		t.Fatal(err)
	}
	a := start()
	waitRunning(t, status, "st1", "web-st1")

	a.Stop()
	if err := os.Remove(manifest); err != nil {
		t.Fatal(err)
	}
	start()
	testutil.Eventually(t, 15*time.Second, func() error {
		_, err := status.Get(context.Background(), wire.StatusKey("st1", "default", "web-st1"))
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil
		}
		return fmt.Errorf("the removed static pod is still listed (err %v)", err)
	})
}
