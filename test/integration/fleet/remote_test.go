package fleet

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/test/testutil"
)

// testRemoteLifecycle: apply --wait runs a pod; a changed env replaces its
// container; a graceful delete shows Terminating, waits out the grace period
// and removes the key; --now removes a pod at once.
func testRemoteLifecycle(t *testing.T, f *fleet) {
	n := f.startNode(t, "lc-n1", nil, nil)
	dir := t.TempDir()
	script := `trap "" TERM; echo "greeting=$GREETING"; while true; do sleep 1; done`
	file := testutil.WriteFile(t, dir, "web.yaml", podYAML("web", script, `    env: [{name: GREETING, value: one}]`))

	out := f.mustCtl(t, "apply", "-f", file, "--node", n.name, "--wait", "--wait-timeout", "40s")
	if !strings.Contains(out, "pod/web created") {
		t.Errorf("apply output = %q, want pod/web created", out)
	}
	p := f.getPod(t, n.name, "default", "web")
	if !isRunning(p) {
		t.Fatalf("after apply --wait: %s", testutil.PodSummary(p))
	}
	firstID := containerID(t, p, "app")
	if got := n.runningContainers("default", "web"); len(got) != 1 || !strings.HasSuffix(firstID, got[0].Id) {
		t.Fatalf("runtime runs %d containers of web, want 1 with id %s", len(got), firstID)
	}

	// Update: a changed env is a changed spec: the container is replaced.
	testutil.WriteFile(t, dir, "web.yaml", podYAML("web", script, `    env: [{name: GREETING, value: two}]`))
	out = f.mustCtl(t, "apply", "-f", file, "--node", n.name)
	if !strings.Contains(out, "pod/web configured") {
		t.Errorf("re-apply output = %q, want pod/web configured", out)
	}
	p = f.waitPod(t, n.name, "default", "web", "running a new container", func(p *v1.Pod) bool {
		return isRunning(p) && p.Status.ContainerStatuses[0].ContainerID != firstID
	})
	if p.Spec.Containers[0].Env[0].Value != "two" {
		t.Errorf("status spec env = %v, want GREETING=two", p.Spec.Containers[0].Env)
	}
	eventually(t, waitFor, func() error {
		if got := n.runningContainers("default", "web"); len(got) != 1 {
			return fmt.Errorf("runtime runs %d containers of web, want 1", len(got))
		}
		return nil
	})
	logs := f.mustCtl(t, "logs", "web", "--node", n.name)
	if !strings.Contains(logs, "greeting=two") {
		t.Errorf("logs of the new container = %q, want greeting=two", logs)
	}

	// Graceful delete: Terminating while the container ignores SIGTERM, then
	// gone after the 2 s grace period, and the node removes the key.
	key := wire.DesiredNodeKey(n.name, "default", "web")
	deleted := time.Now()
	out = f.mustCtl(t, "delete", "pod", "web", "--grace-period", "2", "--node", n.name)
	if !strings.Contains(out, "grace period 2s") {
		t.Errorf("delete output = %q", out)
	}
	eventually(t, waitFor, func() error {
		table := f.mustCtl(t, "get", "pods", "--node", n.name)
		if !lineHas(table, "web", "Terminating") {
			return fmt.Errorf("get pods does not show web Terminating:\n%s", table)
		}
		return nil
	})
	f.waitGone(t, n.name, "default", "web")
	if took := time.Since(deleted); took < 1500*time.Millisecond {
		t.Errorf("pod gone %s after a graceful delete with a 2 s grace period: the grace period was not honoured", took)
	}
	eventually(t, waitFor, func() error {
		if f.hasKey(t, key) {
			return fmt.Errorf("desired key %s still exists", key)
		}
		return nil
	})
	if got := n.runningContainers("default", "web"); len(got) != 0 {
		t.Errorf("runtime still runs %d containers of web", len(got))
	}

	// Immediate remove.
	file = testutil.WriteFile(t, dir, "quick.yaml", podYAML("quick", "while true; do sleep 1; done"))
	f.mustCtl(t, "apply", "-f", file, "--node", n.name, "--wait", "--wait-timeout", "40s")
	out = f.mustCtl(t, "delete", "pod", "quick", "--now", "--node", n.name)
	if !strings.Contains(out, "immediately") {
		t.Errorf("delete --now output = %q", out)
	}
	if f.hasKey(t, wire.DesiredNodeKey(n.name, "default", "quick")) {
		t.Errorf("delete --now left the desired key")
	}
	f.waitGone(t, n.name, "default", "quick")
	eventually(t, waitFor, func() error {
		if got := n.runningContainers("default", "quick"); len(got) != 0 {
			return fmt.Errorf("runtime still runs %d containers of quick", len(got))
		}
		return nil
	})
}

// lineHas reports whether a line of a table starts with name and contains
// every one of words.
func lineHas(table, name string, words ...string) bool {
	for _, l := range strings.Split(table, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || f[0] != name {
			continue
		}
		ok := true
		for _, w := range words {
			if !strings.Contains(l, w) {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}
