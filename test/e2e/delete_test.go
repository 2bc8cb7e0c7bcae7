//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/test/testutil"
)

// trapTERM ignores SIGTERM (noting it in /host/events) so only SIGKILL ends
// the container.
const trapTERM = "trap 'echo TERM >> /host/events' TERM; echo started >> /host/events; while true; do sleep 1; done"

// withHostDir mounts the host directory dir at /host in every container.
func withHostDir(p *v1.Pod, dir string) *v1.Pod {
	typ := v1.HostPathDirectory
	p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: dir, Type: &typ}}})
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].VolumeMounts = append(p.Spec.Containers[i].VolumeMounts, v1.VolumeMount{Name: "host", MountPath: "/host"})
	}
	return p
}

// waitExited polls CRI until the container exited and returns its status.
func waitExited(t *testing.T, rt *cri.Client, containerID string, timeout time.Duration) *runtimeapi.ContainerStatus {
	t.Helper()
	id := strings.TrimPrefix(containerID, "containerd://")
	var st *runtimeapi.ContainerStatus
	eventually(t, timeout, func() error {
		resp, err := rt.ContainerStatus(context.Background(), id, false)
		if err != nil {
			return fmt.Errorf("container %s: %w", id, err)
		}
		if resp.Status.State != runtimeapi.ContainerState_CONTAINER_EXITED {
			return fmt.Errorf("container %s: %s", id, resp.Status.State)
		}
		st = resp.Status
		return nil
	})
	return st
}

// Scenario 5: a graceful delete runs preStop, then SIGTERM, then SIGKILL
// once the grace period is over; a second delete with a shorter grace during
// termination shortens it.
func TestGracefulDelete(t *testing.T) {
	a := startAgent(t, agentOptions{})
	rt := criFor(t)
	dirA, dirB := t.TempDir(), t.TempDir()

	graceful := withHostDir(shPod("graceful", trapTERM), dirA)
	grace := int64(6)
	graceful.Spec.TerminationGracePeriodSeconds = &grace
	graceful.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{
		Exec: &v1.ExecAction{Command: []string{"sh", "-c", "echo prestop >> /host/events"}},
	}}
	shorten := withHostDir(shPod("shorten", trapTERM), dirB)
	long := int64(60)
	shorten.Spec.TerminationGracePeriodSeconds = &long
	a.apply(t, graceful, shorten)

	pods := map[string]string{} // name → container ID
	for _, name := range []string{"graceful", "shorten"} {
		p := a.waitPod(t, name, 60*time.Second, isRunning)
		pods[name] = containerStatus(p, "main").ContainerID
	}
	for _, dir := range []string{dirA, dirB} {
		eventually(t, 10*time.Second, func() error { return fileHas(filepath.Join(dir, "events"), "started") })
	}

	// The pod's own grace period: preStop, TERM (ignored), KILL at ~6 s.
	deleted := time.Now()
	a.mustCtl(t, "delete", "pod", "graceful", "-n", namespace)
	eventually(t, 10*time.Second, func() error {
		if st := a.tableStatus(t, "graceful"); st != "Terminating" {
			return fmt.Errorf("STATUS %q, want Terminating", st)
		}
		return nil
	})
	st := waitExited(t, rt, pods["graceful"], 30*time.Second)
	took := time.Unix(0, st.FinishedAt).Sub(deleted)
	t.Logf("graceful: exit %d %s after the delete", st.ExitCode, took.Round(time.Millisecond))
	if st.ExitCode != 137 {
		t.Errorf("graceful: exit code %d, want 137 (SIGKILL after the grace period)", st.ExitCode)
	}
	if took < time.Duration(grace-1)*time.Second || took > time.Duration(grace+4)*time.Second {
		t.Errorf("graceful: killed %s after the delete, want about the grace period %ds", took, grace)
	}
	b, _ := os.ReadFile(filepath.Join(dirA, "events"))
	if got := strings.Fields(string(b)); strings.Join(got, ",") != "started,prestop,TERM" {
		t.Errorf("graceful: events %v, want started, prestop, TERM in that order", got)
	}
	// Terminated, the node removes the desired key and the status goes.
	eventually(t, 30*time.Second, func() error {
		all, err := a.pods()
		if err != nil {
			return err
		}
		if p := all["graceful"]; p != nil {
			return fmt.Errorf("still listed: %s", testutil.PodSummary(p))
		}
		return nil
	})

	// A second delete with a shorter grace shortens a termination under way.
	first := time.Now()
	a.mustCtl(t, "delete", "pod", "shorten", "-n", namespace)
	eventually(t, 10*time.Second, func() error { return fileHas(filepath.Join(dirB, "events"), "TERM") })
	time.Sleep(time.Second) // well inside the 60 s grace period
	a.mustCtl(t, "delete", "pod", "shorten", "-n", namespace, "--grace-period", "2")
	st = waitExited(t, rt, pods["shorten"], 20*time.Second)
	took = time.Unix(0, st.FinishedAt).Sub(first)
	t.Logf("shorten: exit %d %s after the first delete", st.ExitCode, took.Round(time.Millisecond))
	if st.ExitCode != 137 || took > 10*time.Second {
		t.Errorf("shorten: exit %d after %s, want 137 well before the original 60 s grace", st.ExitCode, took)
	}
}

// fileHas is nil when the file contains s.
func fileHas(path, s string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !strings.Contains(string(b), s) {
		return fmt.Errorf("%s: %q has no %q", path, b, s)
	}
	return nil
}
