package actorcore

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
)

// A pod actor that panics in the middle of its work is restarted by its
// supervisor and rebuilds its state from the runtime: the pod keeps
// running, the containers that were running are not restarted, and the
// restart shows in actorlet_actor_restarts_total and in describe.
//
// The panic is planted in the runtime: when the operator restarts the
// sidecar, the pod actor's sync creates a new sidecar instance and that
// CreateContainer panics.
func TestPanickingPodActorIsRestartedAndPodKeepsRunning(t *testing.T) {
	t.Parallel()
	start := time.Now()
	planted := &panickyRuntime{pod: "steady", container: "side"}
	e := newEnv(t, envOptions{wrap: func(rt cri.Runtime) cri.Runtime {
		planted.Runtime = rt
		return planted
	}})
	e.apply(e.pod("steady", shell("app", "exec sleep 600"), shell("side", "exec sleep 600")))
	before := e.waitPod("steady", 30*time.Second, running)
	app := containerStatus(t, before, "app")
	side := containerStatus(t, before, "side")

	watch := e.watchStatus("steady")
	planted.arm()
	if _, err := e.cmd.Restart(e.bg, e.node, namespace, "steady", "side"); err != nil {
		t.Fatalf("restart the sidecar: %v", err)
	}
	eventually(t, 10*time.Second, func() error {
		if !planted.fired.Load() {
			return fmt.Errorf("the planted panic has not fired")
		}
		return nil
	})

	// The restarted actor starts the sidecar again; app is untouched.
	after := e.waitPod("steady", 30*time.Second, func(p *v1.Pod) error {
		if err := running(p); err != nil {
			return err
		}
		if cs := containerStatus(t, p, "side"); cs.ContainerID == side.ContainerID {
			return fmt.Errorf("sidecar not replaced yet")
		}
		return nil
	})
	if got := containerStatus(t, after, "app"); got.ContainerID != app.ContainerID || got.RestartCount != app.RestartCount {
		t.Errorf("app was restarted: %s (restarts %d) → %s (restarts %d)", app.ContainerID, app.RestartCount, got.ContainerID, got.RestartCount)
	}
	if got := containerStatus(t, after, "side"); got.RestartCount != side.RestartCount+1 {
		t.Errorf("sidecar restartCount = %d, want %d (one restart, not a duplicate)", got.RestartCount, side.RestartCount+1)
	}
	_, history := watch.snapshot()
	for _, u := range history {
		if u.pod == nil || u.pod.Status.Phase != v1.PodRunning {
			t.Errorf("the pod left Running during the actor restart: %+v", u)
		}
	}

	// Supervision saw it: the metric and the worker's own count.
	eventually(t, 5*time.Second, func() error {
		if n := counterValue(t, e, "actorlet_actor_restarts_total"); n < 1 {
			return fmt.Errorf("actorlet_actor_restarts_total = %v, want ≥ 1", n)
		}
		return nil
	})
	d, err := e.cmd.DescribePod(e.bg, e.node, namespace, "steady")
	if err != nil {
		t.Fatalf("describe: %v", err)
	}
	if d.Worker.ActorRestarts < 1 {
		t.Errorf("describe: worker actorRestarts = %d, want ≥ 1", d.Worker.ActorRestarts)
	}

	// Nothing duplicated in the runtime.
	sandboxes, err := e.sandboxes("steady")
	if err != nil {
		t.Fatal(err)
	}
	if len(sandboxes) != 1 {
		t.Errorf("%d sandboxes for the pod, want 1", len(sandboxes))
	}
	runningByName := map[string]int{}
	cs, err := e.containers("steady")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			runningByName[c.Metadata.GetName()]++
		}
	}
	if runningByName["app"] != 1 || runningByName["side"] != 1 {
		t.Errorf("running containers by name = %v, want one app and one side", runningByName)
	}
	t.Logf("wall time %s", time.Since(start).Round(time.Millisecond))
}

// counterValue reads a counter from the agent's metrics registry.
func counterValue(t *testing.T, e *env, name string) float64 {
	t.Helper()
	families, err := e.agent.MetricsGatherer().Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		total := 0.0
		for _, m := range f.GetMetric() {
			total += m.GetCounter().GetValue()
		}
		return total
	}
	t.Fatalf("metric %s not registered", name)
	return 0
}
