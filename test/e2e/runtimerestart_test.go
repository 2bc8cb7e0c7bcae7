//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/test/testutil"
)

// containerdCtl runs containerd.sh stop|start.
func containerdCtl(t *testing.T, verb string) {
	t.Helper()
	out, err := exec.Command("bash", "containerd.sh", verb).CombinedOutput()
	if err != nil {
		t.Fatalf("containerd.sh %s: %v\n%s", verb, err, out)
	}
}

// nodeCondition reads a condition of the agent's node from `get nodes -o json`.
func (a *agent) nodeCondition(t *testing.T, typ v1.NodeConditionType) (v1.ConditionStatus, string) {
	t.Helper()
	out := a.mustCtl(t, "get", "nodes", "-o", "json")
	var list struct {
		Items []v1.Node `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("decode get nodes: %v", err)
	}
	for _, n := range list.Items {
		if n.Name != a.node {
			continue
		}
		for _, c := range n.Status.Conditions {
			if c.Type == typ {
				return c.Status, c.Message
			}
		}
	}
	return v1.ConditionUnknown, "no such condition"
}

// Scenario 8: containerd restarted under running pods: the agent reports the
// runtime not ready while it is down, recovers without restarting healthy
// containers, and starts a pod applied meanwhile.
func TestContainerdRestart(t *testing.T) {
	a := startAgent(t, agentOptions{})
	var pods []*v1.Pod
	for i := 0; i < 3; i++ {
		pods = append(pods, shPod(fmt.Sprintf("survivor-%d", i), "sleep 3600"))
	}
	a.apply(t, pods...)
	before := map[string]v1.ContainerStatus{}
	for _, p := range pods {
		s := a.waitPod(t, p.Name, 60*time.Second, isRunning)
		before[p.Name] = *containerStatus(s, "main")
	}

	restarted := false
	t.Cleanup(func() {
		if !restarted {
			containerdCtl(t, "start")
		}
	})
	containerdCtl(t, "stop")
	down := time.Now()
	eventually(t, 30*time.Second, func() error {
		if err := a.healthz(); err == nil {
			return fmt.Errorf("/healthz still OK with containerd down")
		} else if !strings.Contains(err.Error(), "runtime") && !strings.Contains(err.Error(), "PLEG") {
			return fmt.Errorf("/healthz fails for another reason: %v", err)
		}
		return nil
	})
	eventually(t, 30*time.Second, func() error {
		if st, msg := a.nodeCondition(t, "RuntimeReady"); st != v1.ConditionFalse {
			return fmt.Errorf("node RuntimeReady %s (%s), want False", st, msg)
		}
		return nil
	})
	t.Logf("runtime reported not ready %s after containerd stopped", time.Since(down).Round(time.Millisecond))
	late := shPod("late", "sleep 3600")
	a.apply(t, late)

	containerdCtl(t, "start")
	restarted = true
	eventually(t, 60*time.Second, func() error { return a.healthz() })
	eventually(t, 30*time.Second, func() error {
		if st, msg := a.nodeCondition(t, "RuntimeReady"); st != v1.ConditionTrue {
			return fmt.Errorf("node RuntimeReady %s (%s), want True", st, msg)
		}
		return nil
	})
	a.waitPod(t, "late", 90*time.Second, isRunning)

	all, err := a.pods()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		cs := containerStatus(all[p.Name], "main")
		if err := isRunning(all[p.Name]); err != nil || cs.ContainerID != before[p.Name].ContainerID || cs.RestartCount != 0 {
			t.Errorf("pod %s after the runtime restart: %s, id %s (was %s); want the same container still running, no restart",
				p.Name, testutil.PodSummary(all[p.Name]), cs.ContainerID, before[p.Name].ContainerID)
		}
	}
}
