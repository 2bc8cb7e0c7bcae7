package fleet

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/actorlet/actorlet/cri/procruntime/proctest"
	"github.com/actorlet/actorlet/test/testutil"
	v1 "k8s.io/api/core/v1"
)

// hostileManifest is a pod trying to change the host through its root.
const hostileManifest = `apiVersion: v1
kind: Pod
metadata:
  name: host-toucher
spec:
  containers:
  - name: toucher
    image: busybox:1.28
    command: ["sleep", "3600"]
`

// testVolumeManifests applies the manifests of examples/volumes/
// unchanged to a node whose process runtime isolates (as root: the
// default node) and checks the kubelet's outcome: phases, restarts, and
// the files each container finds at its volumes' mountPath, read through
// actorletctl exec. A pod cannot change the host's root nor write outside
// its volumes, and nothing stays mounted once the pods are gone.
func testVolumeManifests(t *testing.T, f *fleet) {
	hostBefore := testutil.HostSnapshot(t, []string{"/", "/etc"}, []string{"/tmp"})
	n := f.startNodeOn(t, "vol-n1", map[string]string{"role": "volumes"}, nil, true)
	files, err := filepath.Glob(filepath.Join(examplesDir(t), "volumes", "*.yaml"))
	if err != nil || len(files) < 6 {
		t.Fatalf("examples/volumes: %v, %v", files, err)
	}
	for _, file := range files {
		f.mustCtl(t, "apply", "-f", file, "--node", n.name)
	}
	hostile := filepath.Join(t.TempDir(), "hostile.yaml")
	if err := os.WriteFile(hostile, []byte(hostileManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	f.mustCtl(t, "apply", "-f", hostile, "--node", n.name)

	// run execs cmd in pod (container c, "" for the only one).
	run := func(pod, c string, cmd ...string) ctlResult {
		args := []string{"exec", pod, "--node", n.name}
		if c != "" {
			args = append(args, "-c", c)
		}
		return f.ctl(t, append(append(args, "--"), cmd...)...)
	}
	// file checks that cat shows want (trimmed) in pod's container c.
	file := func(pod, c, path, want string) {
		t.Helper()
		if r := run(pod, c, "cat", path); r.code != 0 || strings.TrimSpace(r.stdout) != want {
			t.Errorf("%s: cat %s = %s, want %q", pod, path, r, want)
		}
	}
	contains := func(pod, c, path string, want ...string) {
		t.Helper()
		r := run(pod, c, "cat", path)
		for _, w := range want {
			if r.code != 0 || !strings.Contains(r.stdout, w) {
				t.Errorf("%s: cat %s = %s, want it to contain %q", pod, path, r, w)
			}
		}
	}
	noRestarts := func(p *v1.Pod) {
		t.Helper()
		for _, cs := range append(append([]v1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			if cs.RestartCount != 0 {
				t.Errorf("%s: container %s restarted %d times", p.Name, cs.Name, cs.RestartCount)
			}
		}
	}

	t.Run("configMap and secret volumes, with and without items", func(t *testing.T) {
		noRestarts(f.waitRunning(t, n.name, "default", "config-reader"))
		contains("config-reader", "", "/etc/config/game.properties", "enemies=aliens", "lives=3")
		file("config-reader", "", "/etc/config/special.how", "very")
		contains("config-reader", "", "/etc/game.properties", "enemies=aliens") // subPath
		file("config-reader", "", "/etc/items/keys/how", "very")
		if r := run("config-reader", "", "ls", "/etc/items"); strings.TrimSpace(r.stdout) != "keys" {
			t.Errorf("items volume holds %s, want only keys", r)
		}
		file("config-reader", "", "/etc/secret-volume/username", "my-app")
		file("config-reader", "", "/etc/secret-volume/password", "39528$vdg7Jb")
		if r := run("config-reader", "", "stat", "-L", "-c", "%a", "/etc/secret-volume/password", "/etc/secret-items/my-group/my-username"); strings.Fields(r.stdout) == nil || strings.Join(strings.Fields(r.stdout), " ") != "400 444" {
			t.Errorf("secret file modes: %s, want 400 (defaultMode) and 444 (items mode)", r)
		}
		file("config-reader", "", "/etc/secret-items/my-group/my-username", "my-app")
		if r := run("config-reader", "", "touch", "/etc/secret-volume/new"); r.code == 0 {
			t.Error("wrote into a readOnly secret volume")
		}
	})

	t.Run("projected volume", func(t *testing.T) {
		f.waitRunning(t, n.name, "default", "test-projected-volume")
		file("test-projected-volume", "", "/projected-volume/user", "admin")
		file("test-projected-volume", "", "/projected-volume/config/mode", "production")
		contains("test-projected-volume", "", "/projected-volume/labels", `app="projected"`)
	})

	t.Run("downwardAPI volume", func(t *testing.T) {
		f.waitRunning(t, n.name, "default", "kubernetes-downwardapi-volume-example")
		pod := "kubernetes-downwardapi-volume-example"
		contains(pod, "", "/etc/podinfo/labels", `zone="us-est-coast"`, `rack="rack-22"`)
		contains(pod, "", "/etc/podinfo/annotations", `builder="john-doe"`)
		file(pod, "", "/etc/podinfo/mem_limit", "64")
	})

	t.Run("init container and sidecar share emptyDirs with the app", func(t *testing.T) {
		p := f.waitPod(t, n.name, "default", "webapp", "running with its sidecar started", func(p *v1.Pod) bool {
			if !isRunning(p) || len(p.Status.InitContainerStatuses) != 2 {
				return false
			}
			s := p.Status.InitContainerStatuses[1]
			return s.State.Running != nil && s.Started != nil && *s.Started
		})
		noRestarts(p)
		if s := p.Status.InitContainerStatuses[0]; s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
			t.Errorf("init container install: %+v", s.State)
		}
		file("webapp", "app", "/usr/share/app/index.html", "<h1>installed by init</h1>")
		eventually(t, waitFor, func() error {
			if out := f.mustCtl(t, "logs", "webapp", "-c", "logshipper", "--node", n.name); !strings.Contains(out, "served ") {
				return fmt.Errorf("the sidecar does not ship the app's log: %q", out)
			}
			return nil
		})
	})

	t.Run("termination message", func(t *testing.T) {
		p := f.waitPod(t, n.name, "default", "termination-demo", "Succeeded", func(p *v1.Pod) bool { return p != nil && p.Status.Phase == v1.PodSucceeded })
		cs := p.Status.ContainerStatuses
		if len(cs) != 1 || cs[0].State.Terminated == nil || strings.TrimSpace(cs[0].State.Terminated.Message) != "Sleep expired" {
			t.Errorf("termination-demo status: %+v", cs)
		}
		if _, err := os.Stat("/dev/termination-log"); err == nil {
			t.Error("the pod wrote the host's /dev/termination-log")
		}
	})

	t.Run("emptyDir in memory", func(t *testing.T) {
		f.waitRunning(t, n.name, "default", "cache")
		file("cache", "", "/cache/state", "warm")
		if r := run("cache", "", "sh", "-c", "grep ' /cache ' /proc/mounts"); !strings.Contains(r.stdout, "tmpfs") || !strings.Contains(r.stdout, "size=16384k") {
			t.Errorf("/cache is not a 16Mi tmpfs: %s", r)
		}
		if r := run("cache", "", "dd", "if=/dev/zero", "of=/cache/big", "bs=1M", "count=32"); r.code == 0 {
			t.Errorf("wrote 32Mi into a 16Mi memory emptyDir: %s", r)
		}
	})

	t.Run("a pod cannot change the host's root", func(t *testing.T) {
		f.waitRunning(t, n.name, "default", "host-toucher")
		for _, cmd := range [][]string{
			{"touch", "/x"}, {"chmod", "400", "/"}, {"touch", "/tmp/../etc/actorlet-was-here"},
			{"mkdir", "/usr/share/message"}, {"sh", "-c", "echo 1 > /var/log/1.log"},
		} {
			if r := run("host-toucher", "", cmd...); r.code == 0 {
				t.Errorf("%q succeeded in the pod: %s", cmd, r)
			}
		}
		if r := run("host-toucher", "", "sh", "-c", "echo healthy > /tmp/healthy && cat /tmp/healthy"); r.code != 0 || strings.TrimSpace(r.stdout) != "healthy" {
			t.Errorf("the pod's own /tmp is not writable: %s", r)
		}
		if _, err := os.Stat("/tmp/healthy"); err == nil {
			t.Error("the pod's /tmp/healthy is on the host")
		}
		if r := run("host-toucher", "", "ls", n.cfg.RootDir); r.code == 0 && strings.TrimSpace(r.stdout) != "" {
			t.Errorf("the agent's state is visible in the pod: %s", r)
		}
	})

	t.Run("a dead sandbox holder: the pod gets a new sandbox", func(t *testing.T) {
		sbs := n.sandboxes("default", "host-toucher")
		if len(sbs) != 1 {
			t.Fatalf("sandboxes of host-toucher: %v", sbs)
		}
		proctest.KillHolder(t, n.cri, sbs[0].Id)
		f.waitPod(t, n.name, "default", "host-toucher", "running again in a new sandbox", func(p *v1.Pod) bool {
			return isRunning(p) && p.Status.ContainerStatuses[0].RestartCount >= 1
		})
		if got := n.sandboxes("default", "host-toucher"); len(got) < 2 {
			t.Errorf("sandboxes after the holder died: %d, want a new one", len(got))
		}
	})

	for _, p := range []string{"config-reader", "test-projected-volume", "kubernetes-downwardapi-volume-example", "webapp", "termination-demo", "cache", "host-toucher"} {
		f.ctl(t, "delete", "pod", p, "--node", n.name, "--now")
	}
	for _, p := range []string{"config-reader", "test-projected-volume", "kubernetes-downwardapi-volume-example", "webapp", "termination-demo", "cache", "host-toucher"} {
		f.waitGone(t, n.name, "default", p)
	}
	eventually(t, waitFor, func() error {
		if m := testutil.MountsUnder(t, filepath.Dir(n.cfg.RootDir)); len(m) > 0 {
			return fmt.Errorf("mounts left on the host: %q", m)
		}
		return nil
	})
	if after := testutil.HostSnapshot(t, []string{"/", "/etc"}, []string{"/tmp"}); after != hostBefore {
		t.Errorf("the host changed:\nbefore\n%s\nafter\n%s", hostBefore, after)
	}
}
