//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/test/testutil"
)

func execProbe(cmd string, failureThreshold int32) *v1.Probe {
	return &v1.Probe{
		ProbeHandler:     v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", cmd}}},
		PeriodSeconds:    1,
		TimeoutSeconds:   1,
		SuccessThreshold: 1,
		FailureThreshold: failureThreshold,
	}
}

// Scenario 4: a failing liveness probe restarts the container; a readiness
// probe toggles Ready; a startup probe holds both back until it succeeds.
func TestProbes(t *testing.T) {
	a := startAgent(t, agentOptions{})

	live := shPod("liveness", "touch /tmp/healthy; sleep 3600")
	live.Spec.Containers[0].LivenessProbe = execProbe("cat /tmp/healthy", 1)
	ready := shPod("readiness", "sleep 3600")
	ready.Spec.Containers[0].ReadinessProbe = execProbe("cat /tmp/ready", 1)
	startup := shPod("startup", "sleep 3600")
	startup.Spec.Containers[0].StartupProbe = execProbe("cat /tmp/started", 120)
	startup.Spec.Containers[0].LivenessProbe = execProbe("cat /tmp/alive", 1)
	startup.Spec.Containers[0].ReadinessProbe = execProbe("true", 1)
	a.apply(t, live, ready, startup)

	exec := func(pod, script string) {
		t.Helper()
		a.mustCtl(t, "exec", pod, "-n", namespace, "--", "sh", "-c", script)
	}

	// Liveness: healthy, then the probe fails once and the container is
	// restarted (a new instance, the old one's end in lastState).
	p := a.waitPod(t, "liveness", 60*time.Second, isReady)
	firstID := containerStatus(p, "main").ContainerID
	exec("liveness", "rm /tmp/healthy")
	p = a.waitPod(t, "liveness", 30*time.Second, func(p *v1.Pod) error {
		cs := containerStatus(p, "main")
		if cs.RestartCount != 1 || cs.ContainerID == firstID || cs.State.Running == nil {
			return fmt.Errorf("want restarted once and running again")
		}
		return nil
	})
	if last := containerStatus(p, "main").LastTerminationState.Terminated; last == nil || last.ContainerID != firstID {
		t.Errorf("liveness: lastState %+v, want the first instance (%s) terminated", last, firstID)
	}
	if out := a.mustCtl(t, "events", "-n", namespace); !strings.Contains(out, "Unhealthy") || !strings.Contains(out, "Liveness probe failed") {
		t.Errorf("events have no Unhealthy liveness failure:\n%s", out)
	}

	// Readiness: not ready until the file exists, ready while it does.
	a.waitPod(t, "readiness", 30*time.Second, func(p *v1.Pod) error {
		if err := isRunning(p); err != nil {
			return err
		}
		if testutil.PodCondition(p, v1.PodReady) == v1.ConditionTrue || containerStatus(p, "main").Ready {
			return fmt.Errorf("ready before its probe can succeed")
		}
		return nil
	})
	exec("readiness", "touch /tmp/ready")
	a.waitPod(t, "readiness", 20*time.Second, isReady)
	exec("readiness", "rm /tmp/ready")
	p = a.waitPod(t, "readiness", 20*time.Second, func(p *v1.Pod) error {
		if testutil.PodCondition(p, v1.PodReady) == v1.ConditionTrue || containerStatus(p, "main").Ready {
			return fmt.Errorf("still ready")
		}
		return isRunning(p)
	})
	if rc := containerStatus(p, "main").RestartCount; rc != 0 {
		t.Errorf("readiness: restartCount %d, want 0 (readiness never restarts)", rc)
	}
	exec("readiness", "touch /tmp/ready")
	a.waitPod(t, "readiness", 20*time.Second, isReady)

	// Startup: while it has not succeeded, the failing liveness probe must not
	// restart the container and the passing readiness probe must not make it
	// ready. Watched for several probe periods.
	a.waitPod(t, "startup", 30*time.Second, isRunning)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		pods, err := a.pods()
		if err != nil {
			t.Fatal(err)
		}
		p := pods["startup"]
		cs := containerStatus(p, "main")
		if cs.RestartCount != 0 || cs.Ready || testutil.PodCondition(p, v1.PodReady) == v1.ConditionTrue || (cs.Started != nil && *cs.Started) {
			t.Fatalf("startup probe not yet passed, yet: %s started=%v", testutil.PodSummary(p), cs.Started)
		}
		time.Sleep(300 * time.Millisecond)
	}
	exec("startup", "touch /tmp/alive /tmp/started")
	p = a.waitPod(t, "startup", 20*time.Second, func(p *v1.Pod) error {
		cs := containerStatus(p, "main")
		if cs.Started == nil || !*cs.Started {
			return fmt.Errorf("not started")
		}
		return isReady(p)
	})
	if rc := containerStatus(p, "main").RestartCount; rc != 0 {
		t.Errorf("startup: restartCount %d, want 0", rc)
	}
	// Now liveness runs: failing it restarts the container.
	exec("startup", "rm /tmp/alive")
	a.waitPod(t, "startup", 30*time.Second, func(p *v1.Pod) error {
		if containerStatus(p, "main").RestartCount < 1 {
			return fmt.Errorf("not restarted by liveness after startup")
		}
		return nil
	})
}
