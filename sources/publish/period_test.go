package publish

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/messages"
)

// A node publishes its heartbeat period, so readers judge staleness by the
// node's own pace rather than the default.
func TestHeartbeatPeriodIsPublished(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	node := buildNode(nodeFacts{name: "n1", period: 500 * time.Millisecond},
		messages.NodeConditions{RuntimeReady: true, PLEGHealthy: true}, nil, now, nil)
	if got := HeartbeatPeriod(node, DefaultHeartbeatPeriod); got != 500*time.Millisecond {
		t.Fatalf("HeartbeatPeriod = %v, want 500ms", got)
	}
	if ok, _ := NodeReady(node, now.Add(time.Second), HeartbeatPeriod(node, DefaultHeartbeatPeriod)); !ok {
		t.Errorf("node is not ready 1s after its beat")
	}
	if ok, why := NodeReady(node, now.Add(3*time.Second), HeartbeatPeriod(node, DefaultHeartbeatPeriod)); ok || why == "" {
		t.Errorf("node beating every 500ms is still ready 3s after its last beat (%q)", why)
	}

	for _, tt := range []struct {
		name        string
		annotations map[string]string
		want        time.Duration
	}{
		{"none", nil, DefaultHeartbeatPeriod},
		{"unreadable", map[string]string{HeartbeatPeriodAnnotation: "soon"}, DefaultHeartbeatPeriod},
		{"not positive", map[string]string{HeartbeatPeriodAnnotation: "0s"}, DefaultHeartbeatPeriod},
		{"given", map[string]string{HeartbeatPeriodAnnotation: "2s"}, 2 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: tt.annotations}}
			if got := HeartbeatPeriod(n, DefaultHeartbeatPeriod); got != tt.want {
				t.Errorf("HeartbeatPeriod = %v, want %v", got, tt.want)
			}
		})
	}
	if got := HeartbeatPeriod(nil, time.Minute); got != time.Minute {
		t.Errorf("HeartbeatPeriod(nil) = %v, want the default", got)
	}
}
