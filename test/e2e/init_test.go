//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/cri/kuberuntime"
)

// Scenario 2: init containers run one after another before the app; a
// failing init container blocks the pod (Init:Error, Init:CrashLoopBackOff)
// and the app never starts.
func TestInitContainers(t *testing.T) {
	a := startAgent(t, agentOptions{})
	rt := criFor(t)

	withWork := func(p *v1.Pod) *v1.Pod {
		p.Spec.Volumes = []v1.Volume{{Name: "work", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
		mount := []v1.VolumeMount{{Name: "work", MountPath: "/work"}}
		for i := range p.Spec.InitContainers {
			p.Spec.InitContainers[i].VolumeMounts = mount
		}
		for i := range p.Spec.Containers {
			p.Spec.Containers[i].VolumeMounts = mount
		}
		return p
	}
	ordered := shPod("init-order", "echo app >> /work/order; cat /work/order; sleep 3600")
	ordered.Spec.InitContainers = []v1.Container{
		// The first sleeps, so a second running early would write first.
		shContainer("first", "sleep 1; echo first >> /work/order"),
		shContainer("second", "echo second >> /work/order"),
		shContainer("third", "echo third >> /work/order"),
	}
	failing := shPod("init-fail", "echo app >> /work/order; sleep 3600")
	failing.Spec.InitContainers = []v1.Container{
		shContainer("ok", "echo ok >> /work/order"),
		shContainer("broken", "echo broken >> /work/order; exit 4"),
	}
	a.apply(t, withWork(ordered), withWork(failing))

	p := a.waitPod(t, "init-order", 60*time.Second, isRunning)
	for _, name := range []string{"first", "second", "third"} {
		cs := containerStatus(p, name)
		if cs == nil || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 || cs.State.Terminated.Reason != "Completed" {
			t.Errorf("init container %s: %+v, want terminated Completed exit 0", name, cs)
		}
	}
	eventually(t, 10*time.Second, func() error {
		out, _, err := a.ctl("logs", "init-order", "-n", namespace)
		if err != nil {
			return err
		}
		if want := "first\nsecond\nthird\napp\n"; out != want {
			return fmt.Errorf("app log %q, want %q", out, want)
		}
		return nil
	})

	// The failing init container: Init:Error, then Init:CrashLoopBackOff as
	// it is retried (restartPolicy Always), and the app never created.
	seen := map[string]bool{}
	eventually(t, 60*time.Second, func() error {
		st := a.tableStatus(t, "init-fail")
		seen[st] = true
		if !seen["Init:CrashLoopBackOff"] {
			return fmt.Errorf("STATUS %q, seen %v: want Init:CrashLoopBackOff", st, keys(seen))
		}
		return nil
	})
	if !seen["Init:Error"] {
		t.Logf("Init:Error not caught between polls (seen %v); checking the init status instead", keys(seen))
	}
	pods, err := a.pods()
	if err != nil {
		t.Fatal(err)
	}
	fp := pods["init-fail"]
	if fp.Status.Phase != v1.PodPending {
		t.Errorf("phase %s, want Pending", fp.Status.Phase)
	}
	broken := containerStatus(fp, "broken")
	if broken == nil || broken.RestartCount < 1 || broken.LastTerminationState.Terminated == nil ||
		broken.LastTerminationState.Terminated.ExitCode != 4 || broken.LastTerminationState.Terminated.Reason != "Error" {
		t.Errorf("init container broken: %+v, want restarted, last terminated Error exit 4", broken)
	}
	if app := containerStatus(fp, "main"); app == nil || app.State.Waiting == nil || app.State.Waiting.Reason != "PodInitializing" {
		t.Errorf("app container: %+v, want waiting PodInitializing", app)
	}
	rp, err := runtimePodByUID(context.Background(), rt, string(fp.UID))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rp.containers {
		if c.Labels[kuberuntime.LabelContainerName] == "main" {
			t.Errorf("the app container was created in containerd (%s, %s) behind a failing init container", c.Id, c.State)
		}
	}
}

// tableStatus is the STATUS column of `actorletctl get pods` for name.
func (a *agent) tableStatus(t *testing.T, name string) string {
	t.Helper()
	out := a.mustCtl(t, "get", "pods", "-n", namespace)
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == name {
			return f[2]
		}
	}
	return ""
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
