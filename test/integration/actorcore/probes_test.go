package actorcore

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/test/testutil"
)

// A failing exec liveness probe restarts the container: the restart count
// goes up, the old instance becomes the last (terminated) state, and the
// prober records an Unhealthy event.
func TestLivenessFailureRestartsContainer(t *testing.T) {
	t.Parallel()
	start := time.Now()
	e := newEnv(t, envOptions{})
	unhealthy := filepath.Join(e.dir, "unhealthy")
	// A new instance clears the flag, so the restart heals the container.
	app := shell("app", fmt.Sprintf("rm -f %s; exec sleep 600", unhealthy))
	app.LivenessProbe = execProbe("test ! -e "+unhealthy, 1)
	e.apply(e.pod("live", app))

	before := containerStatus(t, e.waitPod("live", 30*time.Second, running), "app")
	if before.RestartCount != 0 {
		t.Fatalf("restartCount before the probe failed = %d, want 0", before.RestartCount)
	}
	if err := os.WriteFile(unhealthy, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	after := e.waitPod("live", 30*time.Second, func(p *v1.Pod) error {
		if err := running(p); err != nil {
			return err
		}
		cs := containerStatus(t, p, "app")
		if cs.RestartCount != 1 || cs.ContainerID == before.ContainerID {
			return fmt.Errorf("not restarted once yet")
		}
		return nil
	})
	cs := containerStatus(t, after, "app")
	last := cs.LastTerminationState.Terminated
	if last == nil {
		t.Fatalf("lastState.terminated not set after the liveness restart: %s", testutil.PodSummary(after))
	}
	if last.ContainerID != before.ContainerID {
		t.Errorf("lastState.terminated.containerID = %s, want the killed instance %s", last.ContainerID, before.ContainerID)
	}
	ev := e.waitEvent("live", v1.EventTypeWarning, "Unhealthy", 10*time.Second)
	if !strings.Contains(ev.Message, "Liveness probe failed") {
		t.Errorf("Unhealthy event message = %q, want it to name the liveness probe", ev.Message)
	}
	if _, err := os.Stat(unhealthy); !os.IsNotExist(err) {
		t.Errorf("the new instance did not run (flag file still there: %v)", err)
	}
	t.Logf("wall time %s", time.Since(start).Round(time.Millisecond))
}

// A readiness probe flips the Ready condition and the container's ready
// flag: False while the file is missing, True once it exists, False again
// when it is removed; the container is never restarted.
func TestReadinessProbeFlipsReady(t *testing.T) {
	t.Parallel()
	start := time.Now()
	e := newEnv(t, envOptions{})
	ready := filepath.Join(e.dir, "ready")
	app := shell("app", "exec sleep 600")
	app.ReadinessProbe = execProbe("test -e "+ready, 0)
	e.apply(e.pod("ready", app))

	want := func(status v1.ConditionStatus) func(*v1.Pod) error {
		return func(p *v1.Pod) error {
			if err := running(p); err != nil {
				return err
			}
			if got := testutil.PodCondition(p, v1.PodReady); got != status {
				return fmt.Errorf("Ready condition %q, want %q", got, status)
			}
			if got := testutil.PodCondition(p, v1.ContainersReady); got != status {
				return fmt.Errorf("ContainersReady condition %q, want %q", got, status)
			}
			if cs := containerStatus(t, p, "app"); cs.Ready != (status == v1.ConditionTrue) {
				return fmt.Errorf("container ready %t, want %s", cs.Ready, status)
			}
			return nil
		}
	}
	first := containerStatus(t, e.waitPod("ready", 30*time.Second, want(v1.ConditionFalse)), "app")

	if err := os.WriteFile(ready, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e.waitPod("ready", 15*time.Second, want(v1.ConditionTrue))

	if err := os.Remove(ready); err != nil {
		t.Fatal(err)
	}
	last := containerStatus(t, e.waitPod("ready", 15*time.Second, want(v1.ConditionFalse)), "app")
	if last.ContainerID != first.ContainerID || last.RestartCount != 0 {
		t.Errorf("a readiness failure restarted the container: %s (restarts %d) → %s (restarts %d)",
			first.ContainerID, first.RestartCount, last.ContainerID, last.RestartCount)
	}
	t.Logf("wall time %s", time.Since(start).Round(time.Millisecond))
}
