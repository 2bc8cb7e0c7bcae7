package hostile

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/bus"
	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/node/agent"
	"github.com/actorlet/actorlet/test/testenv"
	"github.com/actorlet/actorlet/test/testutil"
)

const (
	nodeName = "hostile-1"
	waitFor  = 45 * time.Second
	// maxRSSGrowth bounds how much the agent's process (this test binary,
	// race detector included) may grow while it takes the abuse. Unbounded,
	// the env bomb alone asks for ~100 GB and a cat /dev/zero exec for all
	// of memory.
	maxRSSGrowth = 400 << 20
)

// env is one agent on the process runtime and a bus client.
type env struct {
	t       *testing.T
	conn    *bus.Conn
	desired jetstream.KeyValue
	status  jetstream.KeyValue
	agent   *agent.Agent
}

func newEnv(t *testing.T) *env {
	t.Helper()
	srv := bustest.StartServer(t, bustest.ServerOptions{})
	conn := bustest.ConnectWithProtocol(t, srv)
	_, client := testenv.Runtime(t, filepath.Join(t.TempDir(), "runtime"))
	cfg := testenv.AgentConfig(t, nodeName, srv.ClientURL(), client)
	cfg.RelistPeriod = 500 * time.Millisecond
	a := testenv.StartAgent(t, cfg)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	e := &env{t: t, conn: conn, agent: a}
	e.desired, err = conn.JS.KeyValue(ctx, wire.DesiredBucket)
	if err != nil {
		t.Fatal(err)
	}
	e.status, err = conn.JS.KeyValue(ctx, wire.StatusBucket)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) put(key string, value []byte) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.desired.Put(ctx, key, value); err != nil {
		e.t.Fatalf("put %s (%d bytes): %v", key, len(value), err)
	}
}

// putPod writes a pod to this node's desired key.
func (e *env) putPod(p *v1.Pod) {
	e.t.Helper()
	data, err := json.Marshal(p)
	if err != nil {
		e.t.Fatal(err)
	}
	e.put(wire.DesiredNodeKey(nodeName, p.Namespace, p.Name), data)
}

// pod is a one-container pod running cmd on the host.
func pod(name string, cmd ...string) *v1.Pod {
	if len(cmd) == 0 {
		cmd = []string{"sleep", "3600"}
	}
	return &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: new(int64),
			Containers:                    []v1.Container{{Name: "app", Image: "local/host", Command: cmd}},
		},
	}
}

// statusOf reads a pod's status entry; nil when there is none.
func (e *env) statusOf(name string) *v1.Pod {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	entry, err := e.status.Get(ctx, wire.StatusKey(nodeName, "default", name))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		e.t.Fatalf("get status of %s: %v", name, err)
	}
	var p v1.Pod
	if err := json.Unmarshal(entry.Value(), &p); err != nil {
		e.t.Fatalf("status of %s is not a pod: %v", name, err)
	}
	return &p
}

// waitStatus waits until the pod's status entry satisfies cond.
func (e *env) waitStatus(name, what string, cond func(*v1.Pod) bool) *v1.Pod {
	e.t.Helper()
	var got *v1.Pod
	testutil.Eventually(e.t, waitFor, func() error {
		got = e.statusOf(name)
		if got == nil || !cond(got) {
			return fmt.Errorf("pod %s is not %s: %s", name, what, testutil.PodSummary(got))
		}
		return nil
	})
	return got
}

// startPod writes an ordinary pod named name and waits until it runs.
func (e *env) startPod(name string) {
	e.t.Helper()
	e.putPod(pod(name))
	e.waitRunning(name)
}

func (e *env) waitRunning(name string) *v1.Pod {
	e.t.Helper()
	return e.waitStatus(name, "Running", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodRunning && len(p.Status.ContainerStatuses) > 0 &&
			p.Status.ContainerStatuses[0].State.Running != nil
	})
}

// rss is this process' resident set size (the agent runs in it).
func rss(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// checkRSS fails the test when RSS grew more than maxRSSGrowth over base.
func checkRSS(t *testing.T, base int64, when string) {
	t.Helper()
	now := rss(t)
	t.Logf("RSS %s: %d MiB (base %d MiB)", when, now>>20, base>>20)
	if now-base > maxRSSGrowth {
		t.Errorf("RSS %s grew by %d MiB, over the %d MiB bound", when, (now-base)>>20, maxRSSGrowth>>20)
	}
}
