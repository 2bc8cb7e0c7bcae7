package actorcore

import (
	"fmt"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/test/testutil"
)

// An agent that stops leaves its pods running; a new agent on the same root
// dir, bus and runtime adopts them: the container keeps its ID and restart
// count, and the runtime holds exactly one sandbox and one container for
// the pod while the new agent syncs it again and again.
func TestRestartedAgentAdoptsRunningPod(t *testing.T) {
	t.Parallel()
	start := time.Now()
	e := newEnv(t, envOptions{syncFrequency: time.Second})
	e.apply(e.pod("adopted", shell("app", "exec sleep 600")))
	before := containerStatus(t, e.waitPod("adopted", 30*time.Second, running), "app")

	e.agent.Stop()
	if p, err := e.cmd.GetPod(e.bg, e.node, namespace, "adopted"); err == nil {
		t.Fatalf("the stopped agent still answers: %s", testutil.PodSummary(p))
	}
	assertOneOfEach(t, e, "adopted", before.ContainerID, "after the agent stopped")

	restarted := time.Now()
	e.startAgent()
	// The new agent's own view (the command service answers from its live
	// status), after its worker has synced the pod a few times.
	eventually(t, 30*time.Second, func() error {
		d, err := e.cmd.DescribePod(e.bg, e.node, namespace, "adopted")
		if err != nil {
			return err
		}
		if !d.Worker.Found || d.Worker.LastSyncError != "" || d.Worker.LastSyncTime.Before(restarted.Add(2500*time.Millisecond)) {
			return fmt.Errorf("new worker has not synced repeatedly yet: %+v", d.Worker)
		}
		if err := running(d.Pod); err != nil {
			return err
		}
		return nil
	})
	p, err := e.cmd.GetPod(e.bg, e.node, namespace, "adopted")
	if err != nil {
		t.Fatal(err)
	}
	after := containerStatus(t, p, "app")
	if after.ContainerID != before.ContainerID || after.RestartCount != before.RestartCount {
		t.Errorf("the new agent did not adopt the container: %s (restarts %d) → %s (restarts %d)",
			before.ContainerID, before.RestartCount, after.ContainerID, after.RestartCount)
	}
	assertOneOfEach(t, e, "adopted", before.ContainerID, "after the new agent synced")
	if st, err := e.podStatus("adopted"); err != nil || containerStatus(t, st, "app").ContainerID != before.ContainerID {
		t.Errorf("published status after adoption: %v %v", st, err)
	}
	t.Logf("wall time %s", time.Since(start).Round(time.Millisecond))
}

// assertOneOfEach checks the runtime holds exactly one sandbox and one
// container of the pod, the running container wantID (API form).
func assertOneOfEach(t *testing.T, e *env, pod, wantID, when string) {
	t.Helper()
	sandboxes, err := e.sandboxes(pod)
	if err != nil {
		t.Fatal(err)
	}
	containers, err := e.containers(pod)
	if err != nil {
		t.Fatal(err)
	}
	if len(sandboxes) != 1 || sandboxes[0].State != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Errorf("%s: sandboxes %v, want exactly one, ready", when, sandboxes)
	}
	if len(containers) != 1 || containers[0].State != runtimeapi.ContainerState_CONTAINER_RUNNING ||
		!strings.HasSuffix(wantID, "://"+containers[0].Id) {
		t.Errorf("%s: containers %v, want exactly one, running, %s", when, containers, wantID)
	}
}
