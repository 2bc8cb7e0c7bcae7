package supervisor

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/actorlet/actorlet/actors/podactor/fake"
)

var errFake = errors.New("fake failure")

func TestPanickingPodActorIsRestartedAndResyncs(t *testing.T) {
	h := newHarness(t, nil)
	h.rt.Panic(fake.OpSyncPod, 1)
	h.addRunning("a")
	eventually(t, "panicking sync", func() bool { return h.syncsOf("a") == 1 })
	h.settle()
	// The restart waits for its back-off on the injected clock.
	eventually(t, "resync after restart", func() bool {
		h.clock.Step(100 * time.Millisecond)
		return h.syncsOf("a") >= 2
	})
	eventually(t, "restart recorded", func() bool {
		d := h.describe("a")
		return d.Found && d.ActorRestarts == 1 && d.WorkType == 0
	})
	if n := len(h.killsOf("a")); n != 0 {
		t.Fatalf("a restarted worker must adopt, not kill: %d kills", n)
	}
}

func TestRepeatedPanicsAreReportedAndWorkerRespawnedLater(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.WorkerRestarts = 2
		c.WorkerRespawnDelay = 10 * time.Second
	})
	h.rt.Panic(fake.OpSyncPod, 3)
	h.addRunning("a")
	eventually(t, "worker given up", func() bool {
		h.clock.Step(200 * time.Millisecond)
		d := h.describe("a")
		return d.Found && strings.Contains(d.LastSyncError, "failed and is stopped")
	})
	if n := h.syncsOf("a"); n != 3 {
		t.Fatalf("syncs = %d, want 3 (first try and 2 restarts)", n)
	}
	// Housekeeping respawns it from the desired state once the delay passed.
	h.clock.Step(10 * time.Second)
	eventually(t, "respawned worker syncs", func() bool {
		h.clock.Step(2 * time.Second)
		c := h.rt.Calls(fake.OpSyncPod)
		return len(c) == 4 && c[3].Returned && c[3].Err == nil
	})
	if d := h.describe("a"); !d.Found || d.ActorRestarts < 2 || d.LastSyncError != "" {
		t.Fatalf("respawned worker = %+v", d)
	}
}

// Describing a worker that panicked and waits (suspended) for its restart
// answers from the loop's record at once or after a short wait, never
// hanging an operator for the whole restart back-off.
func TestDescribeOfARestartingWorkerDoesNotHang(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.WorkerRestartBackoff = time.Hour // the fake clock is not stepped: the restart stays pending
		c.WorkerRestartMaxBackoff = time.Hour
	})
	h.rt.Panic(fake.OpSyncPod, 1)
	h.add(newPod("a", "a", 1))
	eventually(t, "the panicking sync", func() bool { return h.syncsOf("a") == 1 })
	start := time.Now()
	d := h.describe("a")
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("describe took %s", took)
	}
	if !d.Found || !(strings.Contains(d.LastSyncError, "panic") || strings.Contains(d.LastSyncError, "did not answer")) {
		t.Fatalf("describe = %+v, want the worker found and its restart or silence explained", d)
	}
}
