package remote

import (
	"strings"
	"testing"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/wire"
)

// TestNodePodWinsOverFleetPodOfTheSameName: the node/fleet name clash rule.
// The node pod wins whatever the order; the fleet pod is stopped and
// reported by a NameConflict event, and runs again once the node key is
// gone.
func TestNodePodWinsOverFleetPodOfTheSameName(t *testing.T) {
	e := newEnv(t)
	fleetKey, nodeKey := wire.DesiredFleetKey("default", "web"), wire.DesiredNodeKey("n1", "default", "web")
	_, c := e.start(t, "n1", nil)
	c.waitUpdates(t, 1)

	e.put(t, fleetKey, podJSON(t, "default", "web", "fleet:1"))
	got := c.waitUpdates(t, 2)
	if got[1].Op != messages.OpAdd || got[1].Pods[0].Spec.Containers[0].Image != "fleet:1" {
		t.Fatalf("got %v, want ADD of the fleet pod", got[1])
	}
	fleetUID := got[1].Pods[0].UID

	// The node pod arrives: the fleet pod is removed first, then it is added.
	e.put(t, nodeKey, podJSON(t, "default", "web", "node:1"))
	got = c.waitUpdates(t, 4)
	if got[2].Op != messages.OpRemove || got[2].Pods[0].UID != fleetUID {
		t.Fatalf("got %v, want REMOVE of the fleet pod", got[2])
	}
	if got[3].Op != messages.OpAdd || got[3].Pods[0].Spec.Containers[0].Image != "node:1" {
		t.Fatalf("got %v, want ADD of the node pod", got[3])
	}
	nodeUID := got[3].Pods[0].UID
	c.mu.Lock()
	events := strings.Join(c.events, "\n")
	c.mu.Unlock()
	if !strings.Contains(events, "Warning "+NameConflictReason) || !strings.Contains(events, fleetKey) || !strings.Contains(events, nodeKey) {
		t.Errorf("events:\n%s\nwant a NameConflict warning naming both keys", events)
	}

	// A fleet change while shadowed sends nothing; a marker shows it was seen.
	e.put(t, fleetKey, podJSON(t, "default", "web", "fleet:2"))
	e.putPod(t, "n1", "marker", "m:1")
	got = c.waitUpdates(t, 5)
	if got[4].Pods[0].Name != "marker" {
		t.Fatalf("got %v, want only the marker (the shadowed fleet change sends nothing)", got[4])
	}

	// The node key goes: the fleet pod (its latest spec) runs again.
	e.del(t, nodeKey)
	got = c.waitUpdates(t, 7)
	if got[5].Op != messages.OpRemove || got[5].Pods[0].UID != nodeUID {
		t.Fatalf("got %v, want REMOVE of the node pod", got[5])
	}
	if got[6].Op != messages.OpAdd || got[6].Pods[0].UID != fleetUID || got[6].Pods[0].Spec.Containers[0].Image != "fleet:2" {
		t.Fatalf("got %v, want ADD of the fleet pod with fleet:2", got[6])
	}
}
