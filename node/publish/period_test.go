package publish

import (
	"encoding/json"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/wire"
)

// A node publishes its heartbeat period, so readers judge staleness by the
// node's own pace rather than the default.
func TestHeartbeatPeriodIsPublished(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	node := buildNode(nodeFacts{name: "n1", period: 500 * time.Millisecond},
		messages.NodeConditions{RuntimeReady: true, PLEGHealthy: true}, nil, now, nil)
	if got := wire.HeartbeatPeriod(node, wire.DefaultHeartbeatPeriod); got != 500*time.Millisecond {
		t.Fatalf("HeartbeatPeriod = %v, want 500ms", got)
	}
	if ok, _ := wire.NodeReady(node, now.Add(time.Second), wire.HeartbeatPeriod(node, wire.DefaultHeartbeatPeriod)); !ok {
		t.Errorf("node is not ready 1s after its beat")
	}
	if ok, why := wire.NodeReady(node, now.Add(4*time.Second), wire.HeartbeatPeriod(node, wire.DefaultHeartbeatPeriod)); ok || why == "" {
		t.Errorf("node beating every 500ms is still ready 4s after its last beat (%q)", why)
	}

	for _, tt := range []struct {
		name        string
		annotations map[string]string
		want        time.Duration
	}{
		{"none", nil, wire.DefaultHeartbeatPeriod},
		{"unreadable", map[string]string{wire.HeartbeatPeriodAnnotation: "soon"}, wire.DefaultHeartbeatPeriod},
		{"not positive", map[string]string{wire.HeartbeatPeriodAnnotation: "0s"}, wire.DefaultHeartbeatPeriod},
		{"given", map[string]string{wire.HeartbeatPeriodAnnotation: "2s"}, 2 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: tt.annotations}}
			if got := wire.HeartbeatPeriod(n, wire.DefaultHeartbeatPeriod); got != tt.want {
				t.Errorf("HeartbeatPeriod = %v, want %v", got, tt.want)
			}
		})
	}
	if got := wire.HeartbeatPeriod(nil, time.Minute); got != time.Minute {
		t.Errorf("HeartbeatPeriod(nil) = %v, want the default", got)
	}
}

// A beat read back from the bus has lost its fraction of a second; a node
// beating every 200ms must not look stale because of that.
func TestNodeReadyAllowsForWholeSecondTimestamps(t *testing.T) {
	beat := time.Date(2025, 6, 1, 12, 0, 0, 900_000_000, time.UTC)
	node := buildNode(nodeFacts{name: "n1", period: 200 * time.Millisecond},
		messages.NodeConditions{RuntimeReady: true, PLEGHealthy: true}, nil, beat, nil)
	data, err := json.Marshal(node)
	if err != nil {
		t.Fatal(err)
	}
	var read v1.Node
	if err := json.Unmarshal(data, &read); err != nil {
		t.Fatal(err)
	}
	period := wire.HeartbeatPeriod(&read, wire.DefaultHeartbeatPeriod)
	if ok, why := wire.NodeReady(&read, beat.Add(100*time.Millisecond), period); !ok {
		t.Errorf("node read back 100ms after its beat is not ready: %s", why)
	}
	if ok, _ := wire.NodeReady(&read, beat.Add(3*time.Second), period); ok {
		t.Errorf("node is still ready 3s after its last beat with a 200ms period")
	}
}
