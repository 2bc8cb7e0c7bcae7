// Package testenv builds what the integration suites (actorcore, fleet,
// recovery, hostile) run a node on: a real process runtime on a unix
// socket, an agent configuration for tests, and a started agent. The bus
// comes from bus/bustest. Everything is torn down by
// t.Cleanup: the agent before the runtime, the runtime with every container
// it started.
package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/cri/procruntime"
	"github.com/actorlet/actorlet/cri/procruntime/proctest"
	"github.com/actorlet/actorlet/node/agent"
)

// Runtime starts a process runtime keeping its state in rootDir and dials
// it (cri/procruntime/proctest). t.Cleanup closes the client and destroys
// the runtime (every container killed).
func Runtime(t testing.TB, rootDir string) (*procruntime.Runtime, *cri.Client) {
	t.Helper()
	return proctest.Start(t, rootDir)
}

// AgentConfig is the configuration the suites start from: node name, the
// loopback address, its own root directory, no healthz port, the bus at
// busURL, the runtime rt, a 200 ms relist, and no QoS cgroups (agents of
// parallel tests would share the host's kubepods hierarchy; the cgroup
// tests turn them on with a cgroup root of their own). Tests adjust the
// rest.
func AgentConfig(t testing.TB, node, busURL string, rt cri.Runtime) agent.Config {
	cfg := agent.DefaultConfig()
	cfg.NodeName = node
	cfg.NodeIP = "127.0.0.1"
	cfg.RootDir = t.TempDir()
	cfg.HealthzPort = 0
	cfg.RelistPeriod = 200 * time.Millisecond
	cfg.NATS = agent.NATSConfig{URL: busURL}
	cfg.Runtime = rt
	cfg.CgroupsPerQOS = false
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
