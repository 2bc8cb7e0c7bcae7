package wire

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Node entries (NodesBucket) carry the node's heartbeat in the Ready
// condition's LastHeartbeatTime; a reader judges staleness with NodeReady.

// DefaultHeartbeatPeriod is a node's heartbeat period when it is not
// configured, and the period readers assume for a node that does not
// announce its own.
const DefaultHeartbeatPeriod = 10 * time.Second

// StaleFactor is how many heartbeat periods may pass before a node counts
// as NotReady.
const StaleFactor = 4

// HeartbeatPeriodAnnotation carries the node's heartbeat period (a Go
// duration), so readers judge staleness by the node's own pace.
const HeartbeatPeriodAnnotation = "actorlet.io/heartbeat-period"

// HeartbeatPeriod is the period a node says it beats at, or def when it
// does not say (or says something unreadable).
func HeartbeatPeriod(node *v1.Node, def time.Duration) time.Duration {
	if node == nil {
		return def
	}
	d, err := time.ParseDuration(node.Annotations[HeartbeatPeriodAnnotation])
	if err != nil || d <= 0 {
		return def
	}
	return d
}

// NodeReady judges a node read from the nodes bucket at now, given the
// heartbeat period (see HeartbeatPeriod): it is ready only if its Ready condition is True and was
// refreshed within StaleFactor periods. The string says why not.
func NodeReady(node *v1.Node, now time.Time, period time.Duration) (bool, string) {
	if node == nil {
		return false, "no node"
	}
	var ready *v1.NodeCondition
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == v1.NodeReady {
			ready = &node.Status.Conditions[i]
		}
	}
	if ready == nil {
		return false, "no Ready condition"
	}
	// Timestamps on the bus have whole seconds: a beat may look up to a
	// second older than it is, which must not flap a fast-beating node.
	if age := now.Sub(ready.LastHeartbeatTime.Time); age > StaleFactor*period+time.Second {
		return false, fmt.Sprintf("heartbeat stale for %s", age.Round(time.Second))
	}
	if ready.Status != v1.ConditionTrue {
		if ready.Message != "" {
			return false, ready.Message
		}
		return false, fmt.Sprintf("Ready is %s (%s)", ready.Status, ready.Reason)
	}
	return true, ""
}
