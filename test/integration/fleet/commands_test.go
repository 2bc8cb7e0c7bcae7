package fleet

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/actorlet/actorlet/node/agent"
	"github.com/actorlet/actorlet/test/testutil"
)

// testCommands drives one live agent with every actorletctl command.
func testCommands(t *testing.T, f *fleet) {
	n := f.startNode(t, "cmd-n1", map[string]string{"role": "ops"}, func(c *agent.Config) { c.NodeStatusUpdateFrequency = time.Second })
	const pod = "ops"
	file := testutil.WriteFile(t, t.TempDir(), "ops.yaml", podYAML(pod,
		`echo "boot $(date +%s%N)"; i=0; while true; do echo "tick $i"; i=$((i+1)); sleep 0.2; done`,
		`    readinessProbe: {exec: {command: ["true"]}, periodSeconds: 1}`))

	// apply --wait
	if out := f.mustCtl(t, "apply", "-f", file, "--node", n.name, "--wait", "--wait-timeout", "40s"); !strings.Contains(out, "pod/ops created") {
		t.Errorf("apply: %q", out)
	}

	// get pods: table (ready once the probe passed), wide, json, yaml, -A.
	eventually(t, waitFor, func() error {
		if table := f.mustCtl(t, "get", "pods", "--node", n.name); !lineHas(table, pod, "1/1", "Running") {
			return fmt.Errorf("get pods does not show ops 1/1 Running:\n%s", table)
		}
		return nil
	})
	if wide := f.mustCtl(t, "get", "pods", "--node", n.name, "-o", "wide"); !lineHas(wide, pod, "Running", "127.0.0.1", n.name) {
		t.Errorf("get pods -o wide:\n%s", wide)
	}
	p := f.getPod(t, n.name, "default", pod)
	if !isRunning(p) || p.Spec.NodeName != n.name {
		t.Fatalf("get pods -o json: %s on %q", testutil.PodSummary(p), p.Spec.NodeName)
	}
	firstID := containerID(t, p, "app")
	var asYAML struct {
		Items []v1.Pod `json:"items"`
	}
	if err := yaml.Unmarshal([]byte(f.mustCtl(t, "get", "pods", "--node", n.name, "-o", "yaml")), &asYAML); err != nil ||
		len(asYAML.Items) != 1 || asYAML.Items[0].Status.Phase != v1.PodRunning {
		t.Errorf("get pods -o yaml: %v %+v", err, asYAML.Items)
	}
	if all := f.mustCtl(t, "get", "pods", "-A"); !strings.Contains(all, "NAMESPACE") || !strings.Contains(all, "default     ops") {
		t.Errorf("get pods -A:\n%s", all)
	}

	// get nodes: this node Ready, with its labels in -o json.
	// Ready once the PLEG has relisted (the first beat may come before).
	eventually(t, waitFor, func() error {
		if nodes := f.mustCtl(t, "get", "nodes"); !lineHas(nodes, n.name, "Ready") || lineHas(nodes, n.name, "NotReady") {
			return fmt.Errorf("get nodes:\n%s", nodes)
		}
		return nil
	})
	var nodeList struct {
		Items []v1.Node `json:"items"`
	}
	if err := json.Unmarshal([]byte(f.mustCtl(t, "get", "nodes", "-o", "json")), &nodeList); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, nd := range nodeList.Items {
		found = found || (nd.Name == n.name && nd.Labels["role"] == "ops")
	}
	if !found {
		t.Errorf("get nodes -o json has no %s with label role=ops", n.name)
	}

	// describe: the actor's state and the probe worker.
	eventually(t, waitFor, func() error {
		d := f.mustCtl(t, "describe", "pod", pod, "--node", n.name)
		for _, w := range []string{"Name:", "ops", "Actor:", "Work Type:", "Probes:", "readiness", "Success"} {
			if !strings.Contains(d, w) {
				return fmt.Errorf("describe lacks %q:\n%s", w, d)
			}
		}
		return nil
	})

	// logs --tail, then -f for a bounded time.
	eventually(t, waitFor, func() error {
		out := f.mustCtl(t, "logs", pod, "--node", n.name, "--tail", "2")
		if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], "tick ") {
			return fmt.Errorf("logs --tail 2 = %q, want two tick lines", out)
		}
		return nil
	})
	firstLog := f.mustCtl(t, "logs", pod, "--node", n.name)
	boot := strings.SplitN(firstLog, "\n", 2)[0]
	if !strings.HasPrefix(boot, "boot ") {
		t.Fatalf("log starts with %q, want the boot line", boot)
	}
	follow := f.ctlStream(t, "logs", pod, "--node", n.name, "-f", "--tail", "0")
	eventually(t, waitFor, func() error {
		if c := strings.Count(follow.out.String(), "tick "); c < 3 {
			return fmt.Errorf("logs -f printed %d new tick lines: %q %q", c, follow.out.String(), follow.errOut.String())
		}
		return nil
	})
	if follow.exited() {
		t.Errorf("logs -f ended on its own: %q", follow.errOut.String())
	}
	follow.stop()

	// exec propagates the exit code and the output.
	r := f.ctl(t, "exec", pod, "--node", n.name, "--", "sh", "-c", "echo out-$POD_NAME; echo err >&2; exit 3")
	if r.code != 3 || !strings.Contains(r.stdout, "out-") || !strings.Contains(r.stderr, "err") {
		t.Errorf("exec: %s", r)
	}
	if r := f.ctl(t, "exec", pod, "--node", n.name, "--", "true"); r.code != 0 {
		t.Errorf("exec true: %s", r)
	}

	// restart, watched with get pods -w: the restart count goes up, the
	// container is new, no CrashLoopBackOff; logs -p shows the old instance.
	watch := f.ctlStream(t, "get", "pods", "--node", n.name, "-w")
	eventually(t, waitFor, func() error {
		if !lineHas(watch.out.String(), pod, "Running") {
			return fmt.Errorf("get pods -w has not listed ops: %q", watch.out.String())
		}
		return nil
	})
	listed := strings.Count(watch.out.String(), "\n")
	if out := f.mustCtl(t, "restart", pod, "--node", n.name); out == "" {
		t.Errorf("restart printed nothing")
	}
	p = f.waitPod(t, n.name, "default", pod, "restarted", func(p *v1.Pod) bool {
		return isRunning(p) && p.Status.ContainerStatuses[0].RestartCount == 1
	})
	if containerID(t, p, "app") == firstID {
		t.Errorf("restart kept container %s", firstID)
	}
	if strings.Contains(testutil.PodSummary(p), "CrashLoopBackOff") {
		t.Errorf("restart led to back-off: %s", testutil.PodSummary(p))
	}
	eventually(t, waitFor, func() error {
		if got := strings.Count(watch.out.String(), "\n"); got <= listed {
			return fmt.Errorf("get pods -w printed no change after the restart: %q", watch.out.String())
		}
		return nil
	})
	watch.stop()
	if prev := f.mustCtl(t, "logs", pod, "--node", n.name, "-p"); !strings.HasPrefix(prev, boot+"\n") {
		t.Errorf("logs -p starts with %q, want the first instance's %q", strings.SplitN(prev, "\n", 2)[0], boot)
	}
	eventually(t, waitFor, func() error {
		cur := f.mustCtl(t, "logs", pod, "--node", n.name)
		if !strings.HasPrefix(cur, "boot ") || strings.HasPrefix(cur, boot+"\n") {
			return fmt.Errorf("current log starts with %q, want a new boot line", strings.SplitN(cur, "\n", 2)[0])
		}
		return nil
	})

	// events: what the node recorded for the pod.
	events := f.mustCtl(t, "events", "--node", n.name)
	for _, reason := range []string{"Created", "Started"} {
		if !eventHas(events, reason, "pod/ops") {
			t.Errorf("events lack %s for pod/ops:\n%s", reason, events)
		}
	}

	// evict: Failed/Evicted, shown as Evicted.
	if out := f.mustCtl(t, "evict", pod, "--node", n.name, "--grace-period", "1"); out == "" {
		t.Errorf("evict printed nothing")
	}
	p = f.waitPod(t, n.name, "default", pod, "evicted", func(p *v1.Pod) bool {
		return p != nil && p.Status.Phase == v1.PodFailed && p.Status.Reason == "Evicted"
	})
	if table := f.mustCtl(t, "get", "pods", "--node", n.name); !lineHas(table, pod, "Evicted") {
		t.Errorf("get pods STATUS of the evicted pod:\n%s", table)
	}
	eventually(t, waitFor, func() error {
		if got := n.runningContainers("default", pod); len(got) != 0 {
			return fmt.Errorf("the evicted pod still runs %d containers", len(got))
		}
		return nil
	})

	// delete removes the evicted pod.
	f.mustCtl(t, "delete", "pod", pod, "--node", n.name, "--now")
	f.waitGone(t, n.name, "default", pod)
}

// testNodeNotReady: a stopped agent's node turns NotReady within a few of
// its (short) heartbeat periods.
func testNodeNotReady(t *testing.T, f *fleet) {
	n := f.startNode(t, "nr-n1", nil, func(c *agent.Config) { c.NodeStatusUpdateFrequency = 500 * time.Millisecond })
	eventually(t, waitFor, func() error {
		if nodes := f.mustCtl(t, "get", "nodes"); !lineHas(nodes, n.name, "Ready") || lineHas(nodes, n.name, "NotReady") {
			return fmt.Errorf("node not Ready:\n%s", nodes)
		}
		return nil
	})
	n.stop()
	stopped := time.Now()
	eventually(t, waitFor, func() error {
		if nodes := f.mustCtl(t, "get", "nodes"); !lineHas(nodes, n.name, "NotReady") {
			return fmt.Errorf("node still Ready %s after its agent stopped:\n%s", time.Since(stopped).Round(time.Millisecond), nodes)
		}
		return nil
	})
	if took := time.Since(stopped); took > 10*time.Second {
		t.Errorf("NotReady only after %s with a 500ms heartbeat", took)
	}
}

// testUnknownNode: a command for a node nobody runs fails at once.
func testUnknownNode(t *testing.T, f *fleet) {
	r := f.ctl(t, "logs", "x", "--node", "nosuch")
	if r.code == 0 || !strings.Contains(r.stderr, `node "nosuch" is not reachable`) {
		t.Errorf("logs for an unknown node: %s", r)
	}
	if r.took > 2*time.Second {
		t.Errorf("logs for an unknown node took %s, want well under 5s", r.took)
	}
}
