//go:build e2e

package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Scenario: the volume manifests of examples/volumes/ (the set the
// process runtime runs in make test, test/integration/fleet) on
// containerd, with the kubelet's outcome: phases, restarts and the files
// each container reads at its volumes' mountPath. Two changes only, for
// this suite's machine: every image is the locally built busybox (no
// registry), and every object goes to the run's namespace.
func TestVolumeManifests(t *testing.T) {
	a := startAgent(t, agentOptions{})
	_, self, _, _ := runtime.Caller(0)
	files, err := filepath.Glob(filepath.Join(filepath.Dir(self), "..", "..", "examples", "volumes", "*.yaml"))
	if err != nil || len(files) < 6 {
		t.Fatalf("examples/volumes: %v, %v", files, err)
	}
	image := regexp.MustCompile(`(?m)^(\s*image:).*$`)
	dir := t.TempDir()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		y := image.ReplaceAllString(string(b), "${1} "+busyboxImage)
		y = strings.ReplaceAll(y, "\nmetadata:\n", "\nmetadata:\n  namespace: "+namespace+"\n")
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a.mustCtl(t, "apply", "-f", dir, "--node", a.node)
	t.Cleanup(func() {
		for _, o := range []string{"configmap game-config", "secret test-secret", "configmap projected-config", "secret projected-user"} {
			kind, name, _ := strings.Cut(o, " ")
			a.ctl("delete", kind, name, "-n", namespace)
		}
	})

	cat := func(pod, c, path string) (string, error) {
		args := []string{"exec", pod, "-n", namespace}
		if c != "" {
			args = append(args, "-c", c)
		}
		out, _, err := a.ctl(append(args, "--", "cat", path)...)
		return strings.TrimSpace(out), err
	}
	file := func(pod, c, path, want string) {
		t.Helper()
		if got, err := cat(pod, c, path); err != nil || got != want {
			t.Errorf("%s: cat %s = %q, %v; want %q", pod, path, got, err, want)
		}
	}
	contains := func(pod, path string, want ...string) {
		t.Helper()
		got, err := cat(pod, "", path)
		for _, w := range want {
			if err != nil || !strings.Contains(got, w) {
				t.Errorf("%s: cat %s = %q, %v; want it to contain %q", pod, path, got, err, w)
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

	noRestarts(a.waitPod(t, "config-reader", 90*time.Second, isRunning))
	contains("config-reader", "/etc/config/game.properties", "enemies=aliens")
	file("config-reader", "", "/etc/items/keys/how", "very")
	contains("config-reader", "/etc/game.properties", "enemies=aliens") // subPath
	file("config-reader", "", "/etc/secret-volume/username", "my-app")
	file("config-reader", "", "/etc/secret-items/my-group/my-username", "my-app")

	a.waitPod(t, "test-projected-volume", 60*time.Second, isRunning)
	file("test-projected-volume", "", "/projected-volume/user", "admin")
	file("test-projected-volume", "", "/projected-volume/config/mode", "production")

	a.waitPod(t, "kubernetes-downwardapi-volume-example", 60*time.Second, isRunning)
	contains("kubernetes-downwardapi-volume-example", "/etc/podinfo/labels", `zone="us-est-coast"`)
	file("kubernetes-downwardapi-volume-example", "", "/etc/podinfo/mem_limit", "64")

	noRestarts(a.waitPod(t, "webapp", 90*time.Second, isRunning))
	file("webapp", "app", "/usr/share/app/index.html", "<h1>installed by init</h1>")

	p := a.waitPod(t, "termination-demo", 60*time.Second, func(p *v1.Pod) error {
		if p.Status.Phase != v1.PodSucceeded {
			return errors.New("not Succeeded")
		}
		return nil
	})
	if cs := containerStatus(p, "termination-demo-container"); cs == nil || cs.State.Terminated == nil || strings.TrimSpace(cs.State.Terminated.Message) != "Sleep expired" {
		t.Errorf("termination-demo: %+v", cs)
	}

	a.waitPod(t, "cache", 60*time.Second, isRunning)
	file("cache", "", "/cache/state", "warm")
	if out, _, err := a.ctl("exec", "cache", "-n", namespace, "--", "sh", "-c", "grep ' /cache ' /proc/mounts"); err != nil || !strings.Contains(out, "tmpfs") || !strings.Contains(out, "size=16384k") {
		t.Errorf("/cache is not a 16Mi tmpfs: %q, %v", out, err)
	}
}
