package wire

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNodeReady(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 1, 0, 0, time.UTC)
	node := func(status v1.ConditionStatus, age time.Duration, msg string) *v1.Node {
		return &v1.Node{Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{
			Type: v1.NodeReady, Status: status, Message: msg, Reason: "R",
			LastHeartbeatTime: metav1.NewTime(now.Add(-age)),
		}}}}
	}
	tests := []struct {
		name    string
		node    *v1.Node
		ready   bool
		message string
	}{
		{"fresh and ready", node(v1.ConditionTrue, 5*time.Second, ""), true, ""},
		{"exactly 4 periods old", node(v1.ConditionTrue, 40*time.Second, ""), true, ""},
		{"stale", node(v1.ConditionTrue, 45*time.Second, ""), false, "heartbeat stale for 45s"},
		{"stale beats not ready", node(v1.ConditionFalse, 2*time.Minute, "down"), false, "heartbeat stale for 2m0s"},
		{"fresh but not ready", node(v1.ConditionFalse, time.Second, "runtime down"), false, "runtime down"},
		{"unknown without message", node(v1.ConditionUnknown, time.Second, ""), false, "Ready is Unknown (R)"},
		{"no Ready condition", &v1.Node{}, false, "no Ready condition"},
		{"nil node", nil, false, "no node"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ready, msg := NodeReady(tt.node, now, 10*time.Second)
			if ready != tt.ready || msg != tt.message {
				t.Errorf("NodeReady = %v, %q; want %v, %q", ready, msg, tt.ready, tt.message)
			}
		})
	}
}
