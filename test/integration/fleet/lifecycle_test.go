package fleet

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/node/agent"
	"github.com/actorlet/actorlet/test/testutil"
)

// testPodLifecycleFields runs, through a live agent, a pod that outlives
// its activeDeadlineSeconds (Failed, DeadlineExceeded), a failing pod
// whose termination message comes from its log (FallbackToLogsOnError),
// and a downwardAPI volume.
func testPodLifecycleFields(t *testing.T, f *fleet) {
	n := f.startNode(t, "life-n1", map[string]string{"role": "life"}, nil)
	dir := t.TempDir()
	deadline := testutil.WriteFile(t, dir, "deadline.yaml", podYAML("deadline", "exec sleep 300", "  activeDeadlineSeconds: 2"))
	failing := testutil.WriteFile(t, dir, "failing.yaml", podYAML("failing", "echo loading; echo 'fatal: no such table'; exit 2",
		"    terminationMessagePolicy: FallbackToLogsOnError", "  restartPolicy: Never"))
	info := testutil.WriteFile(t, dir, "info.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: info
  labels: {tier: front}
spec:
  containers:
  - name: app
    image: busybox:1.36
    command: ["sh", "-c", "exec sleep 300"]
    volumeMounts: [{name: podinfo, mountPath: /etc/podinfo}]
  volumes:
  - name: podinfo
    downwardAPI:
      items:
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
`)
	for _, file := range []string{deadline, failing, info} {
		f.mustCtl(t, "apply", "-f", file, "--node", n.name)
	}
	p := f.waitPod(t, n.name, "default", "deadline", "Failed with DeadlineExceeded", func(p *v1.Pod) bool {
		return p != nil && p.Status.Phase == v1.PodFailed && p.Status.Reason == "DeadlineExceeded"
	})
	if p.Status.Message != "Pod was active on the node longer than the specified deadline" {
		t.Errorf("message = %q", p.Status.Message)
	}
	f.waitPod(t, n.name, "default", "failing", "Failed with its log tail as the message", func(p *v1.Pod) bool {
		if p == nil || p.Status.Phase != v1.PodFailed || len(p.Status.ContainerStatuses) != 1 {
			return false
		}
		term := p.Status.ContainerStatuses[0].State.Terminated
		return term != nil && term.Message == "loading\nfatal: no such table\n"
	})
	p = f.waitRunning(t, n.name, "default", "info")
	b, err := os.ReadFile(filepath.Join(n.cfg.RootDir, "pods", string(p.UID), "volumes", "projected", "podinfo", "labels"))
	if err != nil || !strings.Contains(string(b), `tier="front"`) {
		t.Errorf("downwardAPI labels file: %q %v", b, err)
	}
	for _, name := range []string{"deadline", "failing", "info"} {
		f.ctl(t, "delete", "pod", name, "--node", n.name, "--now")
	}
}

// testDebug adds an ephemeral container to a running pod with
// `actorletctl debug`, as kubectl debug: it runs once beside the app,
// which keeps running, and its output is read with logs -c.
func testDebug(t *testing.T, f *fleet) {
	n := f.startNode(t, "dbg-n1", map[string]string{"role": "debug"}, nil)
	file := testutil.WriteFile(t, t.TempDir(), "app.yaml", podYAML("app", "exec sleep 300"))
	f.mustCtl(t, "apply", "-f", file, "--node", n.name)
	p := f.waitRunning(t, n.name, "default", "app")
	appID := containerID(t, p, "app")
	out := f.mustCtl(t, "debug", "app", "--image", "busybox:1.36", "-c", "dbg", "--node", n.name, "--", "sh", "-c", "echo inside $HOSTNAME")
	if !strings.Contains(out, "ephemeral container dbg added") {
		t.Errorf("debug: %q", out)
	}
	f.waitPod(t, n.name, "default", "app", "with the debug container done", func(p *v1.Pod) bool {
		return p != nil && len(p.Status.EphemeralContainerStatuses) == 1 && p.Status.EphemeralContainerStatuses[0].State.Terminated != nil
	})
	eventually(t, waitFor, func() error {
		if log := f.mustCtl(t, "logs", "app", "-c", "dbg", "--node", n.name); !strings.Contains(log, "inside") {
			return fmt.Errorf("debug container log %q", log)
		}
		return nil
	})
	p = f.waitRunning(t, n.name, "default", "app")
	if containerID(t, p, "app") != appID {
		t.Error("adding a debug container restarted the app")
	}
	if d := f.mustCtl(t, "describe", "pod", "app", "--node", n.name); !strings.Contains(d, "Ephemeral Containers:") {
		t.Errorf("describe lacks the ephemeral container:\n%s", d)
	}
	if r := f.ctl(t, "debug", "app", "--image", "busybox", "-c", "app", "--node", n.name); r.code == 0 || !strings.Contains(r.stderr, "Duplicate value") {
		t.Errorf("a debug container named like the app: %s", r)
	}
	// kubectl debug -it --image busybox with no command: the process
	// runtime has no image entrypoint, said at once, nothing written.
	r := f.ctl(t, "debug", "app", "--image", "busybox", "-it", "-c", "nocmd", "--node", n.name)
	if r.code == 0 || !strings.Contains(r.stderr, "debug container nocmd") || !strings.Contains(r.stderr, "spec.ephemeralContainers[1].command: Required value") ||
		!strings.Contains(r.stderr, "--container-runtime-endpoint") || strings.Contains(r.stderr, "Waiting for container") {
		t.Errorf("debug without a command: %s", r)
	}
	t.Logf("debug without a command failed after %s", r.took.Round(time.Millisecond))
	// A debug session's exit code is ours.
	if r := f.ctl(t, "debug", "app", "--image", "busybox:1.36", "-i", "-c", "exit5", "--node", n.name, "--", "sh", "-c", "sleep 1; exit 5"); r.code != 5 {
		t.Errorf("debug session ending with exit 5: %s", r)
	}
	for _, e := range f.getPod(t, n.name, "default", "app").Spec.EphemeralContainers {
		if e.Name == "nocmd" {
			t.Error("the debug container without a command was written")
		}
	}
	f.ctl(t, "delete", "pod", "app", "--node", n.name, "--now")
}

// testDebugRefusedWithoutExec: a node started with --allow-exec=false
// refuses debug containers as it refuses exec (an ephemeral container is a
// desired-pod write, not a command, so before it ran `id > file` as the
// agent's user): the command never runs, the container waits with reason
// Forbidden and the 403 message, a Warning event says so, and `debug -it`
// is refused at once.
func testDebugRefusedWithoutExec(t *testing.T, f *fleet) {
	n := f.startNode(t, "dbg-noexec", map[string]string{"role": "debug-noexec"}, func(c *agent.Config) { c.AllowExec = false })
	file := testutil.WriteFile(t, t.TempDir(), "app.yaml", podYAML("app", "exec sleep 300"))
	f.mustCtl(t, "apply", "-f", file, "--node", n.name)
	f.waitRunning(t, n.name, "default", "app")
	marker := filepath.Join(t.TempDir(), "ran")
	f.mustCtl(t, "debug", "app", "--image", "busybox:1.36", "-c", "dbg", "--node", n.name, "--", "sh", "-c", "id > "+marker)
	const msg = "forbidden: debug (ephemeral container dbg) is disabled on this node (--allow-exec=false)"
	f.waitPod(t, n.name, "default", "app", "the debug container refused", func(p *v1.Pod) bool {
		if p == nil || len(p.Status.EphemeralContainerStatuses) != 1 {
			return false
		}
		w := p.Status.EphemeralContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "Forbidden" && w.Message == msg
	})
	eventually(t, waitFor, func() error {
		if events := f.mustCtl(t, "events", "--node", n.name); !eventHas(events, "Failed", "pod/app", msg) {
			return fmt.Errorf("no Failed event with %q:\n%s", msg, events)
		}
		return nil
	})
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the debug container's command ran on a node with --allow-exec=false")
	}
	r := f.ctl(t, "debug", "app", "--image", "busybox:1.36", "-c", "dbg2", "-it", "--node", n.name, "--", "sh")
	if r.code == 0 || !strings.Contains(r.stderr, "forbidden") {
		t.Errorf("debug -it on a node without exec: %s", r)
	}
	f.ctl(t, "delete", "pod", "app", "--node", n.name, "--now")
}
