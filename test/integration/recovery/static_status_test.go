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

	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/node/agent"
	"github.com/actorlet/actorlet/test/testenv"
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
	cfg := testenv.AgentConfig(t, "st1", srv.ClientURL(), rt)
	cfg.PodManifestPath = manifests
	start := func() *agent.Agent { return testenv.StartAgent(t, cfg) }
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
