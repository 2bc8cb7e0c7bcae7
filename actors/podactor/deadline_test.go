package podactor

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/actors/podactor/fake"
	"github.com/actorlet/actorlet/messages"
)

// activeDeadlineSeconds: the pod actor's own timer kills the pod once it
// has been active that long, and it ends Failed with DeadlineExceeded.
func TestActiveDeadlineKillsThePod(t *testing.T) {
	h := newHarness(t, "u1")
	p := testPod("u1", 1, nil)
	p.Spec.ActiveDeadlineSeconds = int64p(30)
	h.send(upd(messages.SyncPodCreate, p))
	eventually(t, "first sync", func() bool { return len(messagesOf[*messages.PodSyncCompleted](h)) == 1 })
	h.clock.Step(29 * time.Second)
	h.never("killed before the deadline", func() bool { return h.rt.Count(fake.OpKillPod) != 0 })
	testutilStepUntil(t, h, func() bool { return slices.Contains(h.states(), "finished") })
	st := messagesOf[*messages.PodStatusComputed](h)
	last := st[len(st)-1].Status
	if last.Phase != v1.PodFailed || last.Reason != "DeadlineExceeded" || last.Message != messageDeadlineExceeded {
		t.Fatalf("final status = %s/%s/%s, want Failed/DeadlineExceeded", last.Phase, last.Reason, last.Message)
	}
}

// A pod whose deadline already passed when it is synced (e.g. after an
// agent restart, counted from its status start time) is killed at once.
func TestActiveDeadlineAlreadyPast(t *testing.T) {
	h := newHarness(t, "u1")
	p := testPod("u1", 1, nil)
	p.Spec.ActiveDeadlineSeconds = int64p(10)
	start := h.clock.Now().Add(-time.Minute)
	p.Status.StartTime = &metav1.Time{Time: start}
	h.send(upd(messages.SyncPodCreate, p))
	eventually(t, "finished", func() bool { return slices.Contains(h.states(), "finished") })
	if n := h.rt.Count(fake.OpKillPod); n != 1 {
		t.Fatalf("kills = %d, want 1", n)
	}
}

// A hostile activeDeadlineSeconds (9223372037 s and more overflowed
// time.Duration into a negative one, killing the pod at once) means
// "practically forever": the pod keeps running.
func TestActiveDeadlineHostileValueDoesNotKill(t *testing.T) {
	for _, d := range []int64{9223372037, 18446744074, math.MaxInt64} {
		t.Run(fmt.Sprint(d), func(t *testing.T) {
			h := newHarness(t, "u1")
			p := testPod("u1", 1, nil)
			p.Spec.ActiveDeadlineSeconds = int64p(d)
			h.send(upd(messages.SyncPodCreate, p))
			eventually(t, "first sync", func() bool { return len(messagesOf[*messages.PodSyncCompleted](h)) == 1 })
			h.clock.Step(time.Hour)
			h.never("killed", func() bool { return h.rt.Count(fake.OpKillPod) != 0 })
		})
	}
}

// stepUntil advances the fake clock a second at a time until cond holds.
func testutilStepUntil(t *testing.T, h *harness, cond func() bool) {
	t.Helper()
	eventually(t, "condition after stepping the clock", func() bool {
		if cond() {
			return true
		}
		h.clock.Step(time.Second)
		return false
	})
}
