// Package testenv builds what the integration suites (actorcore, fleet,
// recovery, hostile) run a node on: a real process runtime on a unix
// socket, an agent configuration for tests, and a started agent. The bus
// comes from cmd/actorlet/bus/bustest. Everything is torn down by
// t.Cleanup: the agent before the runtime, the runtime with every container
// it started.
package testenv

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/actorlet/actorlet/cmd/actorlet/agent"
	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/cri/procruntime"
)

// Runtime starts a process runtime keeping its state in rootDir, serving on
// a short socket path (unix socket paths are limited to about 100 bytes),
// and dials it. t.Cleanup closes the client and destroys the runtime (every
// container killed).
func Runtime(t testing.TB, rootDir string) (*procruntime.Runtime, *cri.Client) {
	t.Helper()
	sockDir, err := os.MkdirTemp("", "rt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(sockDir) })
	endpoint := "unix://" + filepath.Join(sockDir, "cri.sock")
	rt, err := procruntime.Start(procruntime.Options{RootDir: rootDir, HostIP: "127.0.0.1"}, endpoint)
	if err != nil {
		t.Fatalf("start the process runtime: %v", err)
	}
	t.Cleanup(rt.Destroy)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := cri.Dial(ctx, endpoint)
	if err != nil {
		t.Fatalf("dial the process runtime: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return rt, c
}

// AgentConfig is the configuration the suites start from: node name, the
// loopback address, its own root directory, no healthz port, the bus at
// busURL, the runtime rt, and a 200 ms relist. Tests adjust the rest.
func AgentConfig(t testing.TB, node, busURL string, rt cri.Runtime) agent.Config {
	cfg := agent.DefaultConfig()
	cfg.NodeName = node
	cfg.NodeIP = "127.0.0.1"
	cfg.RootDir = t.TempDir()
	cfg.HealthzPort = 0
	cfg.RelistPeriod = 200 * time.Millisecond
	cfg.NATS = agent.NATSConfig{URL: busURL}
	cfg.Runtime = rt
	return cfg
}

// StartAgent starts an agent on cfg; t.Cleanup stops it (its pods keep
// running until the runtime is destroyed). Stopping it earlier is fine.
func StartAgent(t testing.TB, cfg agent.Config) *agent.Agent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	a, err := agent.Start(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatalf("start the agent of %s: %v", cfg.NodeName, err)
	}
	t.Cleanup(func() {
		a.Stop()
		cancel()
	})
	return a
}
