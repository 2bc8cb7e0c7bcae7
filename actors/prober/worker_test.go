package prober

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/messages"
)

func TestLivenessFailureThresholdAndHoldUntilNewContainer(t *testing.T) {
	h := newHarness(t)
	pod := testPod("u1", v1.Container{Name: "app", LivenessProbe: execProbe("check live", func(p *v1.Probe) {
		p.PeriodSeconds, p.FailureThreshold = 10, 3
	})})
	now := h.clock.Now()
	h.send(statusOf(pod, "10.0.0.1", cstate{name: "app", id: "containerd://c1", running: true, startedAt: now}))

	// The initial liveness result is Success; the first probe runs at once
	// and a success changes nothing.
	h.waitState("u1", "app", messages.Liveness, "1 success", func(s messages.ProbeState) bool { return s.Successes == 1 })
	h.waitChanges("app", messages.Liveness, "containerd://c1=Success")
	if got := h.exec.count("check live", "c1"); got != 1 {
		t.Fatalf("exec ran %d times in c1 (prefix stripped), want 1", got)
	}

	h.exec.set("check live", 1)
	for i := 1; i <= 2; i++ {
		h.step(10 * time.Second)
		h.waitState("u1", "app", messages.Liveness, "failures", func(s messages.ProbeState) bool { return s.Failures == i })
		if s, _ := h.state("u1", "app", messages.Liveness); s.Result != messages.ProbeSuccess {
			t.Fatalf("after %d failures result = %v, want Success (threshold 3)", i, s.Result)
		}
	}
	h.step(10 * time.Second)
	h.waitChanges("app", messages.Liveness, "containerd://c1=Success", "containerd://c1=Failure")

	// Holding: ticks do not probe the doomed instance.
	calls := h.exec.count("check live", "")
	for i := 0; i < 3; i++ {
		h.step(10 * time.Second)
	}
	// A status round trip through the manager gives the ticks time to
	// arrive; the exec count is checked again once c2 probes below.
	h.send(statusOf(pod, "10.0.0.1", cstate{name: "app", id: "containerd://c1", running: true, startedAt: now}))
	if s, _ := h.state("u1", "app", messages.Liveness); s.Result != messages.ProbeFailure {
		t.Fatalf("held result = %v, want Failure", s.Result)
	}
	if got := h.exec.count("check live", ""); got != calls {
		t.Fatalf("exec ran %d more times while holding", got-calls)
	}

	// A new instance resets to Success and probing resumes.
	h.exec.set("check live", 0)
	h.send(statusOf(pod, "10.0.0.1", cstate{name: "app", id: "containerd://c2", running: true, startedAt: h.clock.Now()}))
	h.waitChanges("app", messages.Liveness, "containerd://c1=Success", "containerd://c1=Failure", "containerd://c2=Success")
	eventually(t, "probe of c2", func() bool { return h.exec.count("check live", "c2") == 1 })
	if got := h.exec.count("check live", "c1"); got != calls {
		t.Fatalf("exec ran %d more times in c1 while holding", got-calls)
	}

	ev := h.rec.Lines()
	if len(ev) != 3 || ev[0] != "Warning Unhealthy Liveness probe failed: check live is unhappy" {
		t.Fatalf("events = %q, want 3 Unhealthy liveness failures", ev)
	}
}

func TestReadinessThresholdsAndOnlyOnChange(t *testing.T) {
	h := newHarness(t)
	pod := testPod("u1", v1.Container{Name: "app", ReadinessProbe: execProbe("check ready", func(p *v1.Probe) {
		p.SuccessThreshold, p.FailureThreshold = 2, 1
	})})
	start := statusOf(pod, "10.0.0.1", cstate{name: "app", id: "c1", running: true, startedAt: h.clock.Now()})
	h.send(start)

	h.waitState("u1", "app", messages.Readiness, "1 success", func(s messages.ProbeState) bool { return s.Successes == 1 })
	h.waitChanges("app", messages.Readiness, "c1=Failure") // initial; one success is not enough
	h.step(10 * time.Second)
	h.waitChanges("app", messages.Readiness, "c1=Failure", "c1=Success")
	for i := 3; i <= 4; i++ {
		h.step(10 * time.Second)
		h.waitState("u1", "app", messages.Readiness, "more successes", func(s messages.ProbeState) bool { return s.Successes == i })
	}
	h.exec.set("check ready", 1)
	h.step(10 * time.Second)
	h.waitChanges("app", messages.Readiness, "c1=Failure", "c1=Success", "c1=Failure")
	// Readiness keeps probing after a failure and recovers.
	h.exec.set("check ready", 0)
	h.step(10 * time.Second)
	h.waitState("u1", "app", messages.Readiness, "1 success", func(s messages.ProbeState) bool { return s.Successes == 1 })
	h.step(10 * time.Second)
	h.waitChanges("app", messages.Readiness, "c1=Failure", "c1=Success", "c1=Failure", "c1=Success")

	// A container that stopped running is not ready, without probing.
	calls := h.exec.count("check ready", "")
	h.send(statusOf(pod, "10.0.0.1", cstate{name: "app", id: "c1", running: false}))
	h.waitChanges("app", messages.Readiness, "c1=Failure", "c1=Success", "c1=Failure", "c1=Success", "c1=Failure")
	h.step(10 * time.Second)
	h.step(10 * time.Second)
	// Counted before the container runs again: a tick of these steps may
	// reach the worker after it (the ticker forwards them on its own
	// goroutine) and rightly probe the running container a second time.
	if got := h.exec.count("check ready", ""); got != calls {
		t.Fatalf("exec ran %d times while the container was down, want 0", got-calls)
	}
	h.send(start) // running again: probes resume
	h.waitState("u1", "app", messages.Readiness, "probing again", func(s messages.ProbeState) bool { return s.Successes >= 1 })
}

func TestInitialDelayCountsFromContainerStart(t *testing.T) {
	h := newHarness(t)
	pod := testPod("u1", v1.Container{Name: "app", LivenessProbe: execProbe("check live", func(p *v1.Probe) {
		p.InitialDelaySeconds, p.PeriodSeconds = 30, 10
	})})
	started := h.clock.Now().Add(-5 * time.Second) // container started 5 s ago
	h.send(statusOf(pod, "10.0.0.1", cstate{name: "app", id: "c1", running: true, startedAt: started}))
	h.waitChanges("app", messages.Liveness, "c1=Success")
	for i := 0; i < 3; i++ { // now at start+35 s
		h.step(10 * time.Second)
	}
	eventually(t, "first probe after the delay", func() bool { return h.exec.count("check live", "c1") >= 1 })
	for _, c := range h.exec.callsOf("check live") {
		if c.at.Sub(started) < 30*time.Second {
			t.Fatalf("probe ran %v after the container started, before the 30s initial delay", c.at.Sub(started))
		}
	}
}

func TestStartupGatesLivenessAndReadiness(t *testing.T) {
	h := newHarness(t)
	pod := testPod("u1", v1.Container{
		Name:           "app",
		StartupProbe:   execProbe("check started", func(p *v1.Probe) { p.PeriodSeconds, p.FailureThreshold = 1, 30 }),
		LivenessProbe:  execProbe("check live", func(p *v1.Probe) { p.PeriodSeconds = 1 }),
		ReadinessProbe: execProbe("check ready", func(p *v1.Probe) { p.PeriodSeconds = 1 }),
	})
	h.exec.set("check started", 1)
	h.send(statusOf(pod, "10.0.0.1", cstate{name: "app", id: "c1", running: true, startedAt: h.clock.Now()}))
	h.waitChanges("app", messages.Startup, "c1=Unknown")
	for i := 1; i <= 3; i++ {
		h.waitState("u1", "app", messages.Startup, "startup failures", func(s messages.ProbeState) bool { return s.Failures == i })
		h.step(time.Second)
	}
	if n := h.exec.count("check live", "") + h.exec.count("check ready", ""); n != 0 {
		t.Fatalf("liveness/readiness ran %d times before startup succeeded", n)
	}

	h.exec.set("check started", 0)
	h.waitChanges("app", messages.Startup, "c1=Unknown", "c1=Success")
	// The gate opens at once: readiness becomes Success without waiting a tick.
	h.waitChanges("app", messages.Readiness, "c1=Failure", "c1=Success")
	eventually(t, "liveness probes", func() bool { return h.exec.count("check live", "c1") >= 1 })

	// The startup probe is done for this instance.
	startups := h.exec.count("check started", "")
	h.step(time.Second)
	h.waitState("u1", "app", messages.Readiness, "2 successes", func(s messages.ProbeState) bool { return s.Successes >= 2 })
	if got := h.exec.count("check started", ""); got != startups {
		t.Fatalf("startup probe ran %d more times after it succeeded", got-startups)
	}

	// A new instance closes the gate again.
	h.exec.set("check started", 1)
	h.send(statusOf(pod, "10.0.0.1", cstate{name: "app", id: "c2", running: true, startedAt: h.clock.Now()}))
	h.waitChanges("app", messages.Startup, "c1=Unknown", "c1=Success", "c2=Unknown")
	h.waitChanges("app", messages.Readiness, "c1=Failure", "c1=Success", "c2=Failure")
	live := h.exec.count("check live", "")
	h.step(time.Second)
	h.waitState("u1", "app", messages.Startup, "c2 startup failure", func(s messages.ProbeState) bool {
		return s.ContainerID == "c2" && s.Failures >= 2
	})
	if got := h.exec.count("check live", "c2"); got != 0 || h.exec.count("check live", "") != live {
		t.Fatalf("liveness ran in c2 before its startup probe succeeded")
	}
}

func TestStartupFailureHolds(t *testing.T) {
	h := newHarness(t)
	pod := testPod("u1", v1.Container{Name: "app", StartupProbe: execProbe("check started", func(p *v1.Probe) {
		p.PeriodSeconds, p.FailureThreshold = 1, 2
	})})
	h.exec.set("check started", 3)
	h.send(statusOf(pod, "", cstate{name: "app", id: "c1", running: true, startedAt: h.clock.Now()}))
	h.waitState("u1", "app", messages.Startup, "1 failure", func(s messages.ProbeState) bool { return s.Failures == 1 })
	h.step(time.Second)
	h.waitChanges("app", messages.Startup, "c1=Unknown", "c1=Failure")
	calls := h.exec.count("check started", "")
	h.step(time.Second)
	h.step(time.Second)
	h.send(statusOf(pod, "", cstate{name: "app", id: "c1", running: true, startedAt: h.clock.Now()}))
	h.list("u1")
	if got := h.exec.count("check started", ""); got != calls {
		t.Fatalf("startup probe ran %d more times while holding", got-calls)
	}
	if ev := h.rec.Lines(); len(ev) == 0 || !strings.HasPrefix(ev[0], "Warning Unhealthy Startup probe failed: ") {
		t.Fatalf("events = %q", ev)
	}
}
