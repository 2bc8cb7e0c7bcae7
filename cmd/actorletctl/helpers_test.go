package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"

	"github.com/actorlet/actorlet/bus"
	"github.com/actorlet/actorlet/bus/bustest"
)

// now is the fake clock's time in every in-process test.
var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// env is a bus with the protocol's buckets and stream, and helpers to seed
// and read it.
type env struct {
	t    *testing.T
	url  string
	conn *bus.Conn
}

func newEnv(t *testing.T) *env {
	t.Helper()
	srv := bustest.StartServer(t, bustest.ServerOptions{})
	return &env{t: t, url: srv.ClientURL(), conn: bustest.ConnectWithProtocol(t, srv)}
}

func (e *env) kv(bucket string) jetstream.KeyValue {
	e.t.Helper()
	kv, err := e.conn.JS.KeyValue(context.Background(), bucket)
	if err != nil {
		e.t.Fatal(err)
	}
	return kv
}

func (e *env) put(bucket, key string, v any) {
	e.t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.kv(bucket).Put(context.Background(), key, data); err != nil {
		e.t.Fatal(err)
	}
}

// pod reads a desired pod; nil when the key does not exist.
func (e *env) pod(bucket, key string) *v1.Pod {
	e.t.Helper()
	en, err := e.kv(bucket).Get(context.Background(), key)
	if err != nil {
		return nil
	}
	var p v1.Pod
	if err := json.Unmarshal(en.Value(), &p); err != nil {
		e.t.Fatal(err)
	}
	return &p
}

// run runs actorletctl in process against the env's server.
func (e *env) run(ctx context.Context, stdin string, args ...string) (string, string, int) {
	var out, errOut bytes.Buffer
	c := &cli{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errOut, clock: testclock.NewFakeClock(now)}
	code := c.main(ctx, append([]string{"--server", e.url, "--timeout", "5s"}, args...))
	return out.String(), errOut.String(), code
}

func (e *env) mustRun(args ...string) string {
	e.t.Helper()
	out, errOut, code := e.run(context.Background(), "", args...)
	if code != 0 {
		e.t.Fatalf("actorletctl %v: exit %d\nstdout: %s\nstderr: %s", args, code, out, errOut)
	}
	return out
}

func statusPod(ns, name string, uid string, created time.Time) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), CreationTimestamp: metav1.NewTime(created)},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox"}}},
	}
}

func running(p *v1.Pod) *v1.Pod {
	p.Status.Phase = v1.PodRunning
	p.Status.PodIP = "10.0.0.5"
	p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "app", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}
	return p
}

func waiting(p *v1.Pod, reason string, restarts int32) *v1.Pod {
	p.Status.Phase = v1.PodRunning
	p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "app", RestartCount: restarts, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason, Message: "back-off 10s"}}}}
	return p
}

func node(name string, heartbeat time.Time, ready v1.ConditionStatus) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Status: v1.NodeStatus{
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: ready, LastHeartbeatTime: metav1.NewTime(heartbeat)}},
			NodeInfo:   v1.NodeSystemInfo{KubeletVersion: "actorlet-0.1", OSImage: "Linux", ContainerRuntimeVersion: "proc://1"},
			Addresses:  []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "192.168.1.10"}},
		},
	}
}
