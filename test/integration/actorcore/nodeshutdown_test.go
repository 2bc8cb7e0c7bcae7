package actorcore

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/actors/supervisor"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/node/agent"
	"github.com/actorlet/actorlet/node/publish"
	"github.com/actorlet/actorlet/node/shutdown/logindtest"
)

// shutdownPod runs until SIGTERM, then appends its name to the order file.
func (e *env) shutdownPod(name string, priority *int32, order string) *v1.Pod {
	p := e.pod(name, shell("app", fmt.Sprintf(`trap 'echo %s >> %s; exit 0' TERM; while true; do sleep 0.1; done`, name, order)))
	p.Spec.Priority = priority
	return p
}

func prio(v int32) *int32 { return &v }

func waitClosed(t *testing.T, ch <-chan struct{}, timeout time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(timeout):
		t.Fatalf("%s: not within %s", what, timeout)
	}
}

// TestNodeShutdownTerminatesPodsByPriority: a real agent on the process
// runtime holds a delay lock of a logind on a real D-Bus; on
// PrepareForShutdown(true) it terminates its pods lowest priority first
// (each group after the one before is gone), publishes their final status
// as the kubelet's, reports the node shutting down, and only then
// releases the lock and ends.
func TestNodeShutdownTerminatesPodsByPriority(t *testing.T) {
	l := logindtest.Start(t, time.Minute)
	e := newEnv(t, envOptions{configure: func(c *agent.Config) {
		c.SystemBusAddress = l.Address
		c.ShutdownGracePeriodByPodPriority = []agent.ShutdownGracePeriodByPodPriority{
			{Priority: 0, ShutdownGracePeriodSeconds: 20}, {Priority: 1000, ShutdownGracePeriodSeconds: 20},
			{Priority: 2000000000, ShutdownGracePeriodSeconds: 20}}
	}})
	lock := l.WaitLock(t, 1, 10*time.Second)
	if lock.What != "shutdown" || lock.Mode != "delay" {
		t.Fatalf("lock = %+v, want a delay lock on shutdown", lock)
	}
	waitClosed(t, lock.HandedOver, 10*time.Second, "the agent holds the lock")

	order := filepath.Join(e.dir, "order")
	// Applied critical first, so creation order cannot explain the result.
	for _, p := range []*v1.Pod{e.shutdownPod("crit", prio(2000000000), order), e.shutdownPod("mid", prio(1000), order), e.shutdownPod("low", nil, order)} {
		e.apply(p)
	}
	for _, name := range []string{"crit", "mid", "low"} {
		e.waitPod(name, 30*time.Second, running)
	}
	if err := l.PrepareForShutdown(true); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, lock.Released, 60*time.Second, "lock released after the pods were terminated")

	data, err := os.ReadFile(order)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(data)); strings.Join(got, " ") != "low mid crit" {
		t.Fatalf("pods got SIGTERM in the order %v, want low mid crit", got)
	}
	// Published before the lock went: read at once, no waiting.
	for _, name := range []string{"low", "mid", "crit"} {
		p, err := e.podStatus(name)
		if err != nil {
			t.Fatal(err)
		}
		var target *v1.PodCondition
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == v1.DisruptionTarget {
				target = &p.Status.Conditions[i]
			}
		}
		if p.Status.Phase != v1.PodFailed || p.Status.Reason != supervisor.ReasonShutdownTerminated ||
			p.Status.Message != supervisor.MessageShutdownTerminated || target == nil || target.Status != v1.ConditionTrue ||
			target.Reason != v1.PodReasonTerminationByKubelet || target.Message != supervisor.MessageShutdownTerminated {
			t.Fatalf("%s status = %s %q %q DisruptionTarget %+v, want Failed Terminated %q and DisruptionTarget True TerminationByKubelet",
				name, p.Status.Phase, p.Status.Reason, p.Status.Message, target, supervisor.MessageShutdownTerminated)
		}
	}
	node := e.nodeEntry()
	ready := false
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			ready = true
			if c.Status != v1.ConditionFalse || c.Message != publish.NodeShuttingDownMessage {
				t.Fatalf("node Ready = %s %q %q, want False %q", c.Status, c.Reason, c.Message, publish.NodeShuttingDownMessage)
			}
		}
	}
	if !ready {
		t.Fatal("node entry has no Ready condition")
	}
	waitClosed(t, e.agent.ShutDown(), 10*time.Second, "the agent ends its run after the shutdown")
}

// TestStopWithoutSystemShutdownLeavesPodsRunning: with graceful shutdown
// on, an agent stopped without PrepareForShutdown (SIGTERM, Ctrl-C)
// leaves its pods running, as always, and lets go of the lock.
func TestStopWithoutSystemShutdownLeavesPodsRunning(t *testing.T) {
	l := logindtest.Start(t, time.Minute)
	e := newEnv(t, envOptions{configure: func(c *agent.Config) {
		c.SystemBusAddress = l.Address
		c.ShutdownGracePeriod = 20 * time.Second
		c.ShutdownGracePeriodCriticalPods = 10 * time.Second
	}})
	lock := l.WaitLock(t, 1, 10*time.Second)
	waitClosed(t, lock.HandedOver, 10*time.Second, "the agent holds the lock")
	order := filepath.Join(e.dir, "order")
	e.apply(e.shutdownPod("low", nil, order))
	e.apply(e.shutdownPod("crit", prio(2000000000), order))
	e.waitPod("low", 30*time.Second, running)
	e.waitPod("crit", 30*time.Second, running)

	e.agent.Stop()
	waitClosed(t, lock.Released, 10*time.Second, "lock released by the stopped agent")
	for _, name := range []string{"low", "crit"} {
		cs, err := e.containers(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) != 1 || cs[0].State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			t.Fatalf("%s containers after the stop: %v, want one running", name, cs)
		}
	}
	if data, err := os.ReadFile(order); err == nil && len(data) > 0 {
		t.Fatalf("pods got SIGTERM on a plain stop: %q", data)
	}
	select {
	case <-e.agent.ShutDown():
		t.Fatal("a plain stop counted as a node shutdown")
	default:
	}
}

// nodeEntry reads the node from the nodes bucket.
func (e *env) nodeEntry() *v1.Node {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.bg, 10*time.Second)
	defer cancel()
	kv, err := e.conn.JS.KeyValue(ctx, wire.NodesBucket)
	if err != nil {
		e.t.Fatal(err)
	}
	entry, err := kv.Get(ctx, wire.EncodeName(e.node))
	if err != nil {
		e.t.Fatalf("node %s: %v", e.node, err)
	}
	var n v1.Node
	if err := json.Unmarshal(entry.Value(), &n); err != nil {
		e.t.Fatal(err)
	}
	return &n
}

// TestShutdownLockTakenAgainAfterBusRestart: when the system bus restarts
// the agent connects again, takes a new lock (then lets the old one go),
// and a shutdown announced on the new bus ends it as before.
func TestShutdownLockTakenAgainAfterBusRestart(t *testing.T) {
	l := logindtest.Start(t, time.Minute)
	e := newEnv(t, envOptions{configure: func(c *agent.Config) {
		c.SystemBusAddress = l.Address
		c.ShutdownGracePeriod = 10 * time.Second
	}})
	first := l.WaitLock(t, 1, 10*time.Second)
	waitClosed(t, first.HandedOver, 10*time.Second, "the agent holds the first lock")
	l.RestartBus()
	second := l.WaitLock(t, 2, 30*time.Second)
	waitClosed(t, second.HandedOver, 10*time.Second, "the agent holds the second lock")
	waitClosed(t, first.Released, 10*time.Second, "the first lock let go once the second is held")
	if err := l.PrepareForShutdown(true); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, second.Released, 30*time.Second, "the second lock released by the shutdown")
	waitClosed(t, e.agent.ShutDown(), 10*time.Second, "the agent ends its run after the shutdown")
}
