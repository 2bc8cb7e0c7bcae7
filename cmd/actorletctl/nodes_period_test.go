package main

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/messages/wire"
)

// get nodes judges a node by the heartbeat period it publishes: a node
// beating every second is NotReady 10 s after its last beat, long before
// the default period would say so.
func TestGetNodesJudgesByTheNodesOwnPeriod(t *testing.T) {
	e := newEnv(t)
	quick := node("quick", now.Add(-10*time.Second), v1.ConditionTrue)
	quick.Annotations = map[string]string{wire.HeartbeatPeriodAnnotation: "1s"}
	e.put(wire.NodesBucket, "quick", quick)
	slow := node("slow", now.Add(-10*time.Second), v1.ConditionTrue)
	e.put(wire.NodesBucket, "slow", slow)
	out := e.mustRun("get", "nodes")
	for _, w := range []string{"quick   NotReady", "slow    Ready"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}
