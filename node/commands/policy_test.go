package commands

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/actorlet/actorlet/messages/wire"
)

// TestCommandsOnlyFromInboxes: messages on a command subject without a
// reply, or with a system ($JS.ACK…, $KV…) or protocol reply, are dropped
// before any handler runs: that is what arrives when another client aims a
// JetStream delivery at the subject.
func TestCommandsOnlyFromInboxes(t *testing.T) {
	nc := runNATS(t)
	var execs atomic.Int32
	node := &fakeNode{exec: func([]string, time.Duration) ([]byte, []byte, int, error) {
		execs.Add(1)
		return nil, nil, 0, nil
	}}
	node.setPods(testPod("default", "web", "u1", "app"))
	svc, err := StartService(nc, node, ServiceOptions{NodeName: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	req, _ := json.Marshal(wire.ExecRequest{Name: "web", Command: []string{"id"}})
	for _, reply := range []string{"", "$JS.ACK.KV_actorlet_desired.actorlet-node-n1.1.1.1.1.0", "$KV.actorlet_nodes.n1", "actorlet.node.n2.exec"} {
		if err := nc.PublishMsg(&nats.Msg{Subject: wire.CommandSubject("n1", wire.VerbExec), Reply: reply, Data: req}); err != nil {
			t.Fatal(err)
		}
	}
	// A real request behind them: it runs, and it is the only one.
	c := &wire.Client{NC: nc, Timeout: 5 * time.Second}
	if _, err := c.Exec(context.Background(), "n1", wire.ExecRequest{Name: "web", Command: []string{"id"}}); err != nil {
		t.Fatalf("exec from an inbox: %v", err)
	}
	if n := execs.Load(); n != 1 {
		t.Fatalf("exec ran %d times, want only the request from an inbox", n)
	}
}

func TestNodePolicyRefusesExecAndLogs(t *testing.T) {
	nc := runNATS(t)
	node := &fakeNode{exec: func([]string, time.Duration) ([]byte, []byte, int, error) {
		t.Error("exec ran on a node that refuses it")
		return nil, nil, 0, nil
	}}
	node.setPods(testPod("default", "web", "u1", "app"))
	svc, err := StartService(nc, node, ServiceOptions{NodeName: "n1", DenyExec: true, DenyLogs: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	c := &wire.Client{NC: nc, Timeout: 5 * time.Second}
	_, err = c.Exec(context.Background(), "n1", wire.ExecRequest{Name: "web", Command: []string{"id"}})
	var e *wire.Error
	if !errors.As(err, &e) || e.Code != wire.CodeForbidden || !strings.Contains(e.Description, "--allow-exec=false") {
		t.Fatalf("exec on a node with --allow-exec=false: %v, want 403 naming the flag", err)
	}
	_, err = c.Logs(context.Background(), "n1", wire.LogsRequest{Name: "web"}, &strings.Builder{})
	if !errors.As(err, &e) || e.Code != wire.CodeForbidden || !strings.Contains(e.Description, "--allow-logs=false") {
		t.Fatalf("logs on a node with --allow-logs=false: %v, want 403 naming the flag", err)
	}
	// Other verbs still work.
	if _, err := c.ListPods(context.Background(), "n1", ""); err != nil {
		t.Fatalf("pods.list: %v", err)
	}
}

// TestLogsInboxMustBeTheReplySubject: the node sends log chunks only to the
// requester's own reply subject; an inbox naming another subject (a
// bucket's key, another node's commands) is refused.
func TestLogsInboxMustBeTheReplySubject(t *testing.T) {
	nc := runNATS(t)
	node := &fakeNode{}
	node.setPods(testPod("default", "web", "u1", "app"))
	svc, err := StartService(nc, node, ServiceOptions{NodeName: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	victim, err := nc.SubscribeSync("$KV.actorlet_nodes.n1")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := json.Marshal(wire.LogsRequest{Name: "web", Follow: true, Inbox: "$KV.actorlet_nodes.n1"})
	msg, err := nc.Request(wire.CommandSubject("n1", wire.VerbLogs), req, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if code := msg.Header.Get(micro.ErrorCodeHeader); code != "400" || !strings.Contains(msg.Header.Get(micro.ErrorHeader), "inbox") {
		t.Fatalf("logs with a foreign inbox: %q %q, want 400 naming inbox", code, msg.Header.Get(micro.ErrorHeader))
	}
	if m, err := victim.NextMsg(100 * time.Millisecond); err == nil {
		t.Fatalf("the node published to the foreign subject: %q", m.Data)
	}
}
