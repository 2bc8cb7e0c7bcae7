package pleg

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critesting "k8s.io/cri-api/pkg/apis/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

const wait = 10 * time.Second

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func readyStatus() *runtimeapi.RuntimeStatus {
	return &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true},
		{Type: runtimeapi.NetworkReady, Status: true},
	}}
}

// newTestConfig returns a config over the upstream fake runtime, with the
// event stream answering Unimplemented unless the test replaces CRI.
func newTestConfig() (Config, *critesting.FakeRuntimeService, *podLister, *clocktesting.FakeClock) {
	fake := critesting.NewFakeRuntimeService()
	fake.FakeStatus = readyStatus()
	lister := newPodLister(fake)
	clk := clocktesting.NewFakeClock(t0)
	return Config{
		Runtime:      lister,
		CRI:          &noEventsRuntime{FakeRuntimeService: fake},
		Cache:        NewCache(clk),
		Clock:        clk,
		RelistPeriod: time.Second,
		// Every tick polls the runtime status: tests see a tick handled
		// to its end by its report.
		RuntimeStatusPeriod: time.Second,
	}, fake, lister, clk
}

func TestConfigValidate(t *testing.T) {
	cfg, _, _, _ := newTestConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"no runtime", func(c *Config) { c.Runtime = nil }, "Runtime is required"},
		{"no cri", func(c *Config) { c.CRI = nil }, "CRI is required"},
		{"no cache", func(c *Config) { c.Cache = nil }, "Cache is required"},
		{"negative period", func(c *Config) { c.RelistPeriod = -time.Second }, "RelistPeriod must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cfg
			tt.mutate(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestRelistSendsEventsAfterCacheUpdate(t *testing.T) {
	cfg, fake, lister, clk := newTestConfig()
	var obsMu sync.Mutex
	var observations []RelistObservation
	cfg.Observer = func(o RelistObservation) {
		obsMu.Lock()
		defer obsMu.Unlock()
		observations = append(observations, o)
	}
	fake.SetFakeSandboxes([]*critesting.FakePodSandbox{fakeSandbox("u1", runtimeapi.PodSandboxState_SANDBOX_READY)})
	fake.SetFakeContainers([]*critesting.FakeContainer{fakeContainer("u1", "c1", runtimeapi.ContainerState_CONTAINER_RUNNING)})

	// What the cache held when each event arrived at the parent.
	var seenMu sync.Mutex
	seen := map[messages.PodLifecycleEvent]cri.ContainerState{}
	rec := &recorder{}
	defer observeEvents(t, &cfg, rec.events)()
	rec.onEvent = func(e messages.PodLifecycleEvent) {
		s, _ := cfg.Cache.Get(e.PodUID)
		st := cri.ContainerState("absent")
		if cs := s.FindContainerStatusByID(e.ContainerID); cs != nil {
			st = cs.State
		}
		seenMu.Lock()
		defer seenMu.Unlock()
		seen[e] = st
	}
	rec = spawnRecorder(t, cfg, rec)
	seenAs := func(e messages.PodLifecycleEvent) cri.ContainerState {
		seenMu.Lock()
		defer seenMu.Unlock()
		return seen[e]
	}

	started := messages.PodLifecycleEvent{PodUID: "u1", Type: messages.ContainerStarted, ContainerID: "c1"}
	sandbox := messages.PodLifecycleEvent{PodUID: "u1", Type: messages.SandboxChanged}
	eventually(t, wait, "first relist events", func() bool { return rec.hasEvent(started) && rec.hasEvent(sandbox) })
	if got := seenAs(started); got != cri.ContainerStateRunning {
		t.Fatalf("cache held container state %q when ContainerStarted arrived, want running", got)
	}

	// The container dies and a new instance starts.
	fake.SetFakeContainers([]*critesting.FakeContainer{
		fakeContainer("u1", "c1", runtimeapi.ContainerState_CONTAINER_EXITED),
		fakeContainer("u1", "c2", runtimeapi.ContainerState_CONTAINER_RUNNING),
	})
	calls := lister.calls()
	eventually(t, wait, "a relist tick", func() bool { clk.Step(time.Second); return lister.calls() > calls })
	died := messages.PodLifecycleEvent{PodUID: "u1", Type: messages.ContainerDied, ContainerID: "c1"}
	started2 := messages.PodLifecycleEvent{PodUID: "u1", Type: messages.ContainerStarted, ContainerID: "c2"}
	eventually(t, wait, "died and started events", func() bool { return rec.hasEvent(died) && rec.hasEvent(started2) })
	if got := seenAs(died); got != cri.ContainerStateExited {
		t.Fatalf("cache held container state %q when ContainerDied arrived, want exited", got)
	}

	// An unchanged relist emits nothing more.
	n := len(rec.events())
	calls = lister.calls()
	eventually(t, wait, "a quiet relist", func() bool { clk.Step(time.Second); return lister.calls() > calls+1 })
	if got := len(rec.events()); got != n {
		t.Fatalf("unchanged relist emitted events: %v", rec.events()[n:])
	}

	// The pod vanishes: its containers are removed and its entry deleted.
	fake.SetFakeContainers(nil)
	fake.SetFakeSandboxes(nil)
	removed1 := messages.PodLifecycleEvent{PodUID: "u1", Type: messages.ContainerRemoved, ContainerID: "c1"}
	removed2 := messages.PodLifecycleEvent{PodUID: "u1", Type: messages.ContainerRemoved, ContainerID: "c2"}
	died2 := messages.PodLifecycleEvent{PodUID: "u1", Type: messages.ContainerDied, ContainerID: "c2"}
	eventually(t, wait, "removal events", func() bool {
		clk.Step(time.Second)
		return rec.hasEvent(removed1) && rec.hasEvent(removed2) && rec.hasEvent(died2)
	})
	if got := seenAs(removed1); got != "absent" {
		t.Fatalf("cache still held the vanished pod's container (%q) when ContainerRemoved arrived", got)
	}

	obsMu.Lock()
	defer obsMu.Unlock()
	if len(observations) < 2 || observations[1].Interval <= 0 || observations[0].Err != nil {
		t.Fatalf("observer saw %+v; want successful relists with intervals", observations)
	}
}

func TestRelistUpdatesCacheTime(t *testing.T) {
	cfg, _, lister, clk := newTestConfig()
	spawnPLEG(t, cfg)
	eventually(t, wait, "first relist", func() bool { return lister.calls() > 0 })
	clk.Step(time.Second)
	// A pod with no containers counts as fresh after the relist that
	// started at the stepped time.
	eventually(t, wait, "cache-wide time to advance", func() bool {
		s, _ := cfg.Cache.Get("nobody")
		if !s.TimeStamp.After(t0) {
			clk.Step(time.Second)
			return false
		}
		return true
	})
}

func TestRelistReinspectsPodWhoseStatusFailed(t *testing.T) {
	cfg, fake, lister, clk := newTestConfig()
	fake.SetFakeContainers([]*critesting.FakeContainer{fakeContainer("u1", "c1", runtimeapi.ContainerState_CONTAINER_RUNNING)})
	lister.failStatus("u1", 1)
	rec := spawnPLEG(t, cfg)

	eventually(t, wait, "first relist", func() bool { return lister.calls() > 0 })
	eventually(t, wait, "failed inspection recorded in the cache", func() bool {
		_, err := cfg.Cache.Get("u1")
		return err != nil
	})
	if evs := rec.events(); len(evs) != 0 {
		t.Fatalf("events sent for a pod that could not be inspected: %v", evs)
	}
	// The next relist inspects the pod again and emits the held-back event.
	started := messages.PodLifecycleEvent{PodUID: "u1", Type: messages.ContainerStarted, ContainerID: "c1"}
	eventually(t, wait, "ContainerStarted after reinspection", func() bool {
		clk.Step(time.Second)
		return rec.hasEvent(started)
	})
	if s, err := cfg.Cache.Get("u1"); err != nil || s.FindContainerStatusByID("c1") == nil {
		t.Fatalf("cache after reinspection = %+v, %v", s, err)
	}
}

func TestRelistHealth(t *testing.T) {
	cfg, _, lister, clk := newTestConfig()
	cfg.RelistThreshold = time.Minute
	lister.setGetPodsErr(errors.New("runtime unreachable"))
	rec := spawnPLEG(t, cfg)

	eventually(t, wait, "first relist attempt", func() bool { return lister.calls() > 0 })
	clk.Step(30 * time.Second)
	eventually(t, wait, "a failing relist after 30s", func() bool { return lister.calls() > 1 })
	if h := rec.health(); len(h) != 0 {
		t.Fatalf("health changed before the threshold: %+v", h)
	}
	eventually(t, wait, "unhealthy after the threshold", func() bool {
		clk.Step(10 * time.Second)
		h := rec.health()
		return len(h) == 1 && !h[0].Healthy && h[0].LastRelist.Equal(t0) && h[0].Message != ""
	})

	lister.setGetPodsErr(nil)
	eventually(t, wait, "healthy after a relist succeeds", func() bool {
		clk.Step(time.Second)
		h := rec.health()
		return len(h) == 2 && h[1].Healthy
	})
}

func TestRuntimeHealth(t *testing.T) {
	cfg, fake, lister, clk := newTestConfig()
	fake.Lock()
	fake.FakeStatus = &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true},
		{Type: runtimeapi.NetworkReady, Status: false, Reason: "NetworkPluginNotReady", Message: "cni config uninitialized"},
	}}
	fake.Unlock()
	rec := spawnPLEG(t, cfg)

	eventually(t, wait, "runtime reported not ready", func() bool {
		h := rec.runtimeHealth()
		return len(h) == 1 && !h[0].Ready && strings.Contains(h[0].Message, "network not ready")
	})
	// The same answer again is not reported.
	calls := lister.calls()
	eventually(t, wait, "more ticks", func() bool { clk.Step(time.Second); return lister.calls() > calls+2 })
	if h := rec.runtimeHealth(); len(h) != 1 {
		t.Fatalf("unchanged runtime status reported again: %+v", h)
	}

	fake.Lock()
	fake.FakeStatus = readyStatus()
	fake.Unlock()
	eventually(t, wait, "runtime reported ready", func() bool {
		clk.Step(time.Second)
		h := rec.runtimeHealth()
		return len(h) == 2 && h[1].Ready
	})
}

func TestRuntimeReadiness(t *testing.T) {
	cond := func(typ string, ok bool) *runtimeapi.RuntimeCondition {
		return &runtimeapi.RuntimeCondition{Type: typ, Status: ok, Reason: "R"}
	}
	tests := []struct {
		name  string
		conds []*runtimeapi.RuntimeCondition
		ready bool
		msg   string
	}{
		{"both ready", []*runtimeapi.RuntimeCondition{cond(runtimeapi.RuntimeReady, true), cond(runtimeapi.NetworkReady, true)}, true, ""},
		{"runtime down", []*runtimeapi.RuntimeCondition{cond(runtimeapi.RuntimeReady, false), cond(runtimeapi.NetworkReady, true)}, false, "runtime is down"},
		{"network down", []*runtimeapi.RuntimeCondition{cond(runtimeapi.RuntimeReady, true), cond(runtimeapi.NetworkReady, false)}, false, "network not ready"},
		{"missing runtime condition", nil, false, "RuntimeReady"},
		{"missing network condition", []*runtimeapi.RuntimeCondition{cond(runtimeapi.RuntimeReady, true)}, false, "NetworkReady"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runtimeReadiness(&runtimeapi.RuntimeStatus{Conditions: tt.conds})
			if got.ready != tt.ready || !strings.Contains(got.message, tt.msg) {
				t.Fatalf("runtimeReadiness() = %+v, want ready=%v message containing %q", got, tt.ready, tt.msg)
			}
		})
	}
}

func TestSubSecondRelistPeriodWithRealClock(t *testing.T) {
	cfg, fake, lister, _ := newTestConfig()
	cfg.Clock = nil // real time
	cfg.Cache = NewCache(nil)
	cfg.RelistPeriod = 20 * time.Millisecond
	fake.SetFakeContainers([]*critesting.FakeContainer{fakeContainer("u1", "c1", runtimeapi.ContainerState_CONTAINER_RUNNING)})
	rec := spawnPLEG(t, cfg)

	eventually(t, wait, "several relists", func() bool { return lister.calls() >= 5 })
	fake.SetFakeContainers([]*critesting.FakeContainer{fakeContainer("u1", "c1", runtimeapi.ContainerState_CONTAINER_EXITED)})
	eventually(t, wait, "ContainerDied", func() bool {
		return rec.hasEvent(messages.PodLifecycleEvent{PodUID: "u1", Type: messages.ContainerDied, ContainerID: "c1"})
	})
}

// The runtime's readiness is polled every RuntimeStatusPeriod (the
// kubelet's 5 s), not at every relist tick.
func TestRuntimeStatusPolledEveryPeriod(t *testing.T) {
	cfg, fake, _, clk := newTestConfig()
	cfg.RuntimeStatusPeriod = 5 * time.Second
	var relisted atomic.Int32
	cfg.Observer = func(RelistObservation) { relisted.Add(1) }
	spawnPLEG(t, cfg)
	statuses := func() int {
		n := 0
		for _, c := range fake.GetCalls() {
			if c == "Status" {
				n++
			}
		}
		return n
	}
	eventually(t, wait, "first relist", func() bool { return relisted.Load() >= 1 })
	for i := int32(1); i <= 10; i++ {
		n := relisted.Load()
		clk.Step(time.Second)
		eventually(t, wait, "relist of the tick", func() bool { return relisted.Load() > n })
	}
	// Ticks at 1..10 s: polls at the first tick, 5 s and 10 s later
	// (give or take half a tick).
	if got := statuses(); got < 2 || got > 3 {
		t.Fatalf("Status polled %d times in 10 ticks of 1 s with a 5 s period, want 2 or 3", got)
	}
}

// A task never started is due at once, however far its zero start time
// is (time.Since of it is the largest Duration: adding to it overflowed).
func TestDueNeverStarted(t *testing.T) {
	never := clocktesting.NewFakeClock(t0).Since(time.Time{})
	for _, c := range []struct {
		since, period time.Duration
		want          bool
	}{
		{never, 30 * time.Second, true},
		{never, 5 * time.Second, true},
		{29*time.Second + 500*time.Millisecond, 30 * time.Second, true},
		{29 * time.Second, 30 * time.Second, false},
		{0, time.Second, true},
	} {
		if got := due(c.since, c.period, time.Second); got != c.want {
			t.Errorf("due(%s, %s, 1s) = %v, want %v", c.since, c.period, got, c.want)
		}
	}
}
