package publish

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/test/testutil"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/messages"
)

// TestOverTheRealProtocol runs the publisher and heartbeat on a bus.Conn
// whose buckets come from EnsureProtocol, across a NATS restart.
func TestOverTheRealProtocol(t *testing.T) {
	srv := bustest.StartServer(t, bustest.ServerOptions{})
	conn := bustest.ConnectWithProtocol(t, srv)

	p := newPublisher(t, StatusConfig{JS: conn.JS, NodeName: testNode})
	h, err := StartHeartbeat(context.Background(), HeartbeatConfig{
		JS: conn.JS, NodeName: testNode, Period: time.Hour,
		Conditions: func(context.Context) (messages.NodeConditions, error) {
			return messages.NodeConditions{RuntimeReady: true, PLEGHealthy: true}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)

	ctx := context.Background()
	status, err := conn.JS.KeyValue(ctx, wire.StatusBucket)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := conn.JS.KeyValue(ctx, wire.NodesBucket)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, func() error {
		if readNode(t, nodes, testNode) == nil {
			return errors.New("node not registered")
		}
		return nil
	})

	srv.Restart()
	for i := 1; i <= 10; i++ {
		p.PodStatusChanged(messages.PodStatusChanged{Pod: statusPod("web", "u1", v1.PodRunning, fmt.Sprintf("v%d", i))})
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if got := getPod(t, status, "web"); got == nil || got.Status.Message != "v10" {
			return fmt.Errorf("status in bucket = %v", got)
		}
		return nil
	})
	testutil.Eventually(t, 30*time.Second, func() error {
		if err := h.Beat(ctx); err != nil {
			return err
		}
		if n := readNode(t, nodes, testNode); n == nil {
			return errors.New("node missing after restart")
		}
		return nil
	})
}
