package podactor

import (
	"errors"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/actors/podactor/fake"
	"github.com/actorlet/actorlet/messages"
)

// waitErr is a back-off wait as cri/kuberuntime reports one.
type waitErr struct{ at time.Time }

func (e waitErr) Error() string      { return "CrashLoopBackOff: back-off" }
func (e waitErr) RetryAt() time.Time { return e.at }

// failErr is a failure that is no wait (a kind error without an end).
type failErr struct{}

func (failErr) Error() string      { return "RunContainerError: boom" }
func (failErr) RetryAt() time.Time { return time.Time{} }

func TestRetryAtFindsEarliestWaitAndWhetherOnlyWaits(t *testing.T) {
	t0 := time.Unix(5000, 0)
	wrap := func(e error) error { return fmt.Errorf("StartContainer %q: %w", "app", e) }
	cases := []struct {
		name      string
		err       error
		at        time.Time
		onlyWaits bool
	}{
		{"nil", nil, time.Time{}, false},
		{"plain error", errors.New("boom"), time.Time{}, false},
		{"one wait", fmt.Errorf("sync pod: %w", errors.Join(wrap(waitErr{t0}))), t0, true},
		{"two waits: earliest", errors.Join(wrap(waitErr{t0.Add(time.Second)}), wrap(waitErr{t0})), t0, true},
		{"wait and failure", errors.Join(wrap(waitErr{t0}), wrap(failErr{})), t0, false},
		{"wait and plain", errors.Join(wrap(waitErr{t0}), errors.New("x")), t0, false},
		{"kind error without end", wrap(failErr{}), time.Time{}, false},
	}
	for _, c := range cases {
		at, only := retryAt(c.err)
		if !at.Equal(c.at) || only != c.onlyWaits {
			t.Errorf("%s: retryAt = %v, %v; want %v, %v", c.name, at, only, c.at, c.onlyWaits)
		}
	}
}

func TestBackOffWaitIsRetriedByTimerExactlyWhenItEnds(t *testing.T) {
	h := newHarness(t, "u1")
	end := h.clock.Now().Add(20 * time.Second)
	h.rt.Fail(fake.OpSyncPod, fmt.Errorf("sync: %w", errors.Join(waitErr{end})))
	p := testPod("u1", 1, nil)
	p.Status.Phase = v1.PodRunning
	h.send(upd(messages.SyncPodCreate, p))
	eventually(t, "first completion", func() bool { return len(messagesOf[*messages.PodSyncCompleted](h)) == 1 })
	c := messagesOf[*messages.PodSyncCompleted](h)[0]
	// The supervisor's requeue is only the safety net behind the timer.
	if want := 20*time.Second + retrySafetyMargin; c.RequeueAfter != want {
		t.Fatalf("RequeueAfter = %s, want %s", c.RequeueAfter, want)
	}
	h.rt.Fail(fake.OpSyncPod, nil)

	h.clock.Step(20*time.Second - time.Millisecond)
	h.never("a sync before the back-off ends", func() bool { return h.rt.Count(fake.OpSyncPod) != 1 })
	h.clock.Step(time.Millisecond)
	eventually(t, "a sync when the back-off ends", func() bool { return h.rt.Count(fake.OpSyncPod) == 2 })
	eventually(t, "second completion", func() bool { return len(messagesOf[*messages.PodSyncCompleted](h)) == 2 })
	if c := messagesOf[*messages.PodSyncCompleted](h)[1]; c.Err != "" || c.RequeueAfter < 60*time.Second {
		t.Fatalf("second completion = %+v, want success and the resync interval", c)
	}
}

func TestWaitAmongOtherErrorsRetriesAtTheEarlierOfBoth(t *testing.T) {
	h := newHarness(t, "u1")
	end := h.clock.Now().Add(2 * time.Second)
	h.rt.Fail(fake.OpSyncPod, errors.Join(waitErr{end}, errors.New("create failed")))
	p := testPod("u1", 1, nil)
	p.Status.Phase = v1.PodRunning
	h.send(upd(messages.SyncPodCreate, p))
	eventually(t, "first completion", func() bool { return len(messagesOf[*messages.PodSyncCompleted](h)) == 1 })
	if c := messagesOf[*messages.PodSyncCompleted](h)[0]; c.RequeueAfter != 2*time.Second+retrySafetyMargin {
		t.Fatalf("RequeueAfter = %s, want the wait's end plus the margin (sooner than the 10 s error back-off)", c.RequeueAfter)
	}
	h.clock.Step(2 * time.Second)
	eventually(t, "a sync when the wait ends", func() bool { return h.rt.Count(fake.OpSyncPod) == 2 })
}

func TestTimerOfATerminatingPodDoesNotSync(t *testing.T) {
	h, p := startedInBackOff(t, 5*time.Second, int64p(1))
	h.send(upd(messages.SyncPodKill, p))
	eventually(t, "kill", func() bool { return h.rt.Count(fake.OpKillPod) == 1 })
	h.clock.Step(5 * time.Second)
	h.never("a sync after termination", func() bool { return h.rt.Count(fake.OpSyncPod) != 1 })
}

// The sync at a back-off's end reads the runtime instead of waiting for the
// PLEG cache to move on: nothing in the runtime changed, so in evented mode
// the cache would only be fresh at its next tick, up to a relist period late.
func TestBackOffRetryReadsTheRuntimeNotTheCache(t *testing.T) {
	h, _ := startedInBackOff(t, 10*time.Second, nil)
	h.rt.Fail(fake.OpSyncPod, nil)
	release := h.cache.Hold() // the cache never becomes fresher
	defer release()
	reads := h.rt.Count(fake.OpGetPodStatus)
	h.clock.Step(10 * time.Second)
	eventually(t, "the retry sync, on a status read from the runtime", func() bool { return h.rt.Count(fake.OpSyncPod) == 2 })
	if h.rt.Count(fake.OpGetPodStatus) == reads {
		t.Fatal("the retry sync did not read the runtime")
	}
}

// A sync that waits for the PLEG cache when the back-off ends (a resync or a
// relist's event started it just before) does not hold the retry back: it
// stops waiting and acts on the runtime's status at the back-off's end.
// Queued behind it, the retry waited for the cache's next freshness tick,
// up to a relist period: the restart gap of 20 s came 0.6–0.9 s late.
func TestBackOffEndWakesASyncWaitingForTheCache(t *testing.T) {
	h, p := startedInBackOff(t, 20*time.Second, nil)
	h.rt.Fail(fake.OpSyncPod, nil)

	release := h.cache.Hold() // the cache never becomes fresher
	defer release()
	h.clock.Step(20*time.Second - time.Millisecond)
	h.send(upd(messages.SyncPodSync, p)) // a resync just before the end
	eventually(t, "the resync waiting for the cache", func() bool { return len(h.cache.MinTimes("u1")) == 2 })
	reads := h.rt.Count(fake.OpGetPodStatus)
	h.never("a sync before the back-off ends", func() bool { return h.rt.Count(fake.OpSyncPod) != 1 })

	h.clock.Step(time.Millisecond)
	eventually(t, "a sync at the back-off's end, the cache still held", func() bool { return h.rt.Count(fake.OpSyncPod) >= 2 })
	if h.rt.Count(fake.OpGetPodStatus) == reads {
		t.Fatal("the woken sync did not read the runtime")
	}
}

// startedInBackOff creates a running pod whose first sync fails only
// because it waits on a back-off ending d from now (grace: its termination
// grace period), and waits for that sync's completion.
func startedInBackOff(t *testing.T, d time.Duration, grace *int64) (*harness, *v1.Pod) {
	t.Helper()
	h := newHarness(t, "u1")
	h.rt.Fail(fake.OpSyncPod, waitErr{h.clock.Now().Add(d)})
	p := testPod("u1", 1, grace)
	p.Status.Phase = v1.PodRunning
	h.send(upd(messages.SyncPodCreate, p))
	eventually(t, "first completion", func() bool { return len(messagesOf[*messages.PodSyncCompleted](h)) == 1 })
	return h, p
}
