package kuberuntime

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestRestartBackOff(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1_000_000, 0))
	b := newBackOff(clk, 10*time.Second, 300*time.Second)
	key := backOffKey{uid: "u", name: "c", hash: 1}

	// Doubling to the cap: each death is right after the restart.
	want := []time.Duration{10, 20, 40, 80, 160, 300, 300}
	for i, w := range want {
		finished := clk.Now()
		if got := b.next(key, finished); got != w*time.Second {
			t.Fatalf("step %d: back-off %s, want %s", i, got, w*time.Second)
		}
		clk.Step(time.Second)
	}

	// In back-off measured from the container's finish.
	finished := clk.Now()
	if in, d := b.inBackOffSince(key, finished); !in || d != 300*time.Second {
		t.Errorf("right after death: in=%t d=%s, want in back-off 300s", in, d)
	}
	clk.Step(301 * time.Second)
	if in, _ := b.inBackOffSince(key, finished); in {
		t.Error("still in back-off after it elapsed")
	}

	// A container that ran for 10 minutes resets the sequence.
	b.next(key, clk.Now())
	clk.Step(11 * time.Minute)
	if got := b.next(key, clk.Now()); got != 10*time.Second {
		t.Errorf("after running 11 min: back-off %s, want reset to 10s", got)
	}

	// A different hash is a different sequence.
	if in, _ := b.inBackOffSince(backOffKey{uid: "u", name: "c", hash: 2}, clk.Now()); in {
		t.Error("new spec hash inherited the back-off")
	}

	// GC drops quiet entries; forgetPod drops a pod's entries.
	clk.Step(11 * time.Minute)
	b.gc()
	if len(b.entries) != 0 {
		t.Errorf("entries after gc = %d, want 0", len(b.entries))
	}
	b.next(key, clk.Now())
	b.forgetPod("u")
	if len(b.entries) != 0 {
		t.Error("forgetPod kept entries")
	}
}

func TestImageBackOffSinceUpdate(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1_000_000, 0))
	b := newBackOff(clk, 10*time.Second, 300*time.Second)
	key := backOffKey{uid: "u", name: "img"}
	if inBackOffNow(b, key) {
		t.Fatal("fresh key in back-off")
	}
	b.next(key, clk.Now())
	if !inBackOffNow(b, key) {
		t.Error("not in back-off right after a failure")
	}
	clk.Step(10 * time.Second)
	if inBackOffNow(b, key) {
		t.Error("in back-off after 10 s")
	}
	b.next(key, clk.Now())
	clk.Step(15 * time.Second)
	if !inBackOffNow(b, key) {
		t.Error("second failure should back off 20 s")
	}
}

func inBackOffNow(b *backOff, key backOffKey) bool {
	in, _ := b.inBackOffSinceUpdate(key)
	return in
}
