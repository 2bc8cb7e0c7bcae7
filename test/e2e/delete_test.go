//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// exitWatch follows the runtime's container events from the moment it
// starts and keeps the status of every container reported stopped, so a
// test still sees a container's exit when the node removes it right after
// (a deleted pod's sandbox goes as soon as its kill is done).
type exitWatch struct {
	mu     sync.Mutex
	exited map[string]*runtimeapi.ContainerStatus
}

func watchExits(t *testing.T, rt *cri.Client) *exitWatch {
	t.Helper()
	w := &exitWatch{exited: map[string]*runtimeapi.ContainerStatus{}}
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan *runtimeapi.ContainerEventResponse, 64)
	established := make(chan struct{})
	var once sync.Once
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = rt.GetContainerEvents(ctx, ch, func(runtimeapi.RuntimeService_GetContainerEventsClient) { once.Do(func() { close(established) }) })
	}()
	go func() {
		for {
			select {
			case e := <-ch:
				if e.GetContainerEventType() != runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT {
					continue
				}
				for _, cs := range e.GetContainersStatuses() {
					if cs.GetId() == e.GetContainerId() && cs.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED {
						w.mu.Lock()
						w.exited[cs.GetId()] = cs
						w.mu.Unlock()
					}
				}
			case <-done:
				return
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-established:
	case <-done:
		t.Fatal("the runtime's container events ended before they were established")
	case <-time.After(10 * time.Second):
		t.Fatal("the runtime's container events not established within 10s")
	}
	return w
}

// waitExited waits until the container exited and returns its status: from
// the runtime's events, or, where they are late, from CRI while it still
// has the container.
func (w *exitWatch) waitExited(t *testing.T, rt *cri.Client, containerID string, timeout time.Duration) *runtimeapi.ContainerStatus {
	t.Helper()
	id := strings.TrimPrefix(containerID, "containerd://")
	var st *runtimeapi.ContainerStatus
	eventually(t, timeout, func() error {
		w.mu.Lock()
		st = w.exited[id]
		w.mu.Unlock()
		if st != nil {
			return nil
		}
		resp, err := rt.ContainerStatus(context.Background(), id, false)
		if err != nil {
			return fmt.Errorf("container %s: no exit event yet, and %w", id, err)
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
	exits := watchExits(t, rt)
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
	st := exits.waitExited(t, rt, pods["graceful"], 30*time.Second)
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
	st = exits.waitExited(t, rt, pods["shorten"], 20*time.Second)
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
