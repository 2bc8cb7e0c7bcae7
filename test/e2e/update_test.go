//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Scenario 6: a spec change (env, then command) restarts only the changed
// container; the other keeps its container ID and restartCount.
func TestSpecChangeRestartsOnlyThatContainer(t *testing.T) {
	a := startAgent(t, agentOptions{})

	pod := shPod("update", "")
	pod.Spec.Containers = []v1.Container{
		shContainer("a", "echo a says $GREETING; sleep 3600"),
		shContainer("b", "echo b says $GREETING; sleep 3600"),
	}
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].Env = []v1.EnvVar{{Name: "GREETING", Value: "hello"}}
	}
	a.apply(t, pod)
	before := a.waitPod(t, "update", 60*time.Second, isRunning)

	type change struct {
		changed, kept string
		edit          func(p *v1.Pod)
		wantLog       string
	}
	for _, c := range []change{
		{"b", "a", func(p *v1.Pod) { p.Spec.Containers[1].Env[0].Value = "bonjour" }, "b says bonjour"},
		{"a", "b", func(p *v1.Pod) { p.Spec.Containers[0].Command[2] = "echo a was changed; sleep 3600" }, "a was changed"},
	} {
		c.edit(pod)
		a.apply(t, pod)
		old := containerStatus(before, c.changed)
		after := a.waitPod(t, "update", 60*time.Second, func(p *v1.Pod) error {
			cs := containerStatus(p, c.changed)
			if cs.ContainerID == old.ContainerID || cs.State.Running == nil {
				return fmt.Errorf("container %s not yet replaced and running", c.changed)
			}
			return isRunning(p)
		})
		if got, want := containerStatus(after, c.changed).RestartCount, old.RestartCount+1; got != want {
			t.Errorf("changed container %s: restartCount %d, want %d", c.changed, got, want)
		}
		k0, k1 := containerStatus(before, c.kept), containerStatus(after, c.kept)
		if k1.ContainerID != k0.ContainerID || k1.RestartCount != k0.RestartCount {
			t.Errorf("unchanged container %s: id %s → %s, restarts %d → %d; want both kept",
				c.kept, k0.ContainerID, k1.ContainerID, k0.RestartCount, k1.RestartCount)
		}
		eventually(t, 10*time.Second, func() error {
			out, _, err := a.ctl("logs", "update", "-n", namespace, "-c", c.changed)
			if err != nil {
				return err
			}
			if !strings.Contains(out, c.wantLog) {
				return fmt.Errorf("log of %s %q, want %q", c.changed, out, c.wantLog)
			}
			return nil
		})
		before = after
	}
}
