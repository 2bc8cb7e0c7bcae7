package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/cri/procruntime"
	"github.com/actorlet/actorlet/cri/procruntime/proctest"
	"github.com/actorlet/actorlet/test/testutil"
)

// procEnv is a manager talking real gRPC to the embedded process runtime on
// a unix socket.
type procEnv struct {
	m     *Manager
	clock *clocktesting.FakeClock
	rec   *testutil.Recorder
}

func newProcEnv(t *testing.T, opts ...func(*Options)) *procEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: runs host processes")
	}
	root := t.TempDir()
	_, client := proctest.Start(t, filepath.Join(root, "state"))
	clk := clocktesting.NewFakeClock(time.Now())
	rec := &testutil.Recorder{}
	o := Options{
		PodLogsDir: filepath.Join(root, "logs"),
		PodsDir:    filepath.Join(root, "pods"),
		HostIP:     "127.0.0.1",
		Clock:      clk,
		Recorder:   rec,
	}
	for _, f := range opts {
		f(&o)
	}
	m := NewManager(client, o)
	return &procEnv{m: m, clock: clk, rec: rec}
}

func (e *procEnv) status(t *testing.T, pod *v1.Pod) (*cri.PodStatus, v1.PodStatus) {
	t.Helper()
	return podStatus(t, e.m, pod)
}

func (e *procEnv) sync(t *testing.T, pod *v1.Pod) SyncResult {
	t.Helper()
	st, _ := e.status(t, pod)
	return e.m.SyncPod(context.Background(), pod, st, nil)
}

// syncUntilRunning syncs the pod until its phase is Running.
func (e *procEnv) syncUntilRunning(t *testing.T, pod *v1.Pod) {
	t.Helper()
	e.syncUntil(t, pod, func(s v1.PodStatus) error {
		if s.Phase != v1.PodRunning {
			return fmt.Errorf("phase %s", s.Phase)
		}
		return nil
	})
}

// syncUntil syncs the pod until cond holds on its generated status.
func (e *procEnv) syncUntil(t *testing.T, pod *v1.Pod, cond func(v1.PodStatus) error) v1.PodStatus {
	t.Helper()
	var last v1.PodStatus
	testutil.Eventually(t, 15*time.Second, func() error {
		e.sync(t, pod)
		_, last = e.status(t, pod)
		return cond(last)
	})
	return last
}

func shPod(name string, scripts map[string]string, order ...string) *v1.Pod {
	pod := newPod(name)
	for _, c := range order {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{
			Name: c, Image: "local/sh:1", Command: []string{"/bin/sh", "-c", scripts[c]},
		})
	}
	return pod
}

// waitExited waits for the named container's newest instance to exit.
func (e *procEnv) waitExited(t *testing.T, pod *v1.Pod, name string) *cri.ContainerStatus {
	t.Helper()
	var cs *cri.ContainerStatus
	testutil.Eventually(t, 10*time.Second, func() error {
		st, _ := e.status(t, pod)
		cs = st.FindContainerStatusByName(name)
		if cs == nil || cs.State != cri.ContainerStateExited {
			return fmt.Errorf("%s not exited: %+v", name, cs)
		}
		return nil
	})
	return cs
}

func TestIntegrationPodWithInitContainerRuns(t *testing.T) {
	e := newProcEnv(t)
	pod := shPod("web", map[string]string{"a": "exec sleep 300", "b": "exec sleep 300"}, "a", "b")
	pod.Spec.InitContainers = []v1.Container{{Name: "init", Image: "local/sh:1", Command: []string{"/bin/sh", "-c", "echo init done"}}}

	api := e.syncUntil(t, pod, func(s v1.PodStatus) error {
		if s.Phase != v1.PodRunning {
			return fmt.Errorf("phase %s", s.Phase)
		}
		return nil
	})
	if cs := api.InitContainerStatuses[0]; cs.State.Terminated == nil || cs.State.Terminated.Reason != "Completed" || cs.State.Terminated.ExitCode != 0 {
		t.Errorf("init status = %+v, want Completed", cs.State)
	}
	for _, cs := range api.ContainerStatuses {
		if cs.State.Running == nil || !strings.HasPrefix(cs.ContainerID, procruntime.RuntimeName+"://") || cs.ImageID == "" {
			t.Errorf("container %s = %+v", cs.Name, cs)
		}
	}
	if api.PodIP != "127.0.0.1" || api.StartTime == nil {
		t.Errorf("podIP %q startTime %v", api.PodIP, api.StartTime)
	}
	log := filepath.Join(e.m.opts.PodLogsDir, "default_web_web-uid", "init", "0.log")
	if b, err := os.ReadFile(log); err != nil || !strings.Contains(string(b), "init done") {
		t.Errorf("init log %s: %q, %v", log, b, err)
	}
}

func TestIntegrationCrashLoopBackOff(t *testing.T) {
	e := newProcEnv(t)
	pod := shPod("crash", map[string]string{"c": "exit 3"}, "c")

	if err := e.sync(t, pod).Error(); err != nil {
		t.Fatal(err)
	}
	if cs := e.waitExited(t, pod, "c"); cs.ExitCode != 3 {
		t.Fatalf("exit code = %d, want 3", cs.ExitCode)
	}
	// First death: restarted at once.
	if err := e.sync(t, pod).Error(); err != nil {
		t.Fatalf("first restart: %v", err)
	}
	e.waitExited(t, pod, "c")
	// Second death: back-off 10 s on the (fake) clock.
	wantCrashLoop(t, e.sync(t, pod).Error(), "back-off 10s")
	_, api := e.status(t, pod)
	cs := api.ContainerStatuses[0]
	if cs.State.Waiting == nil || cs.State.Waiting.Reason != "CrashLoopBackOff" || cs.RestartCount != 1 ||
		cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 3 {
		t.Errorf("status = %+v", cs)
	}

	e.clock.SetTime(time.Now().Add(11 * time.Second))
	if err := e.sync(t, pod).Error(); err != nil {
		t.Fatalf("restart after 10 s: %v", err)
	}
	e.waitExited(t, pod, "c")
	wantCrashLoop(t, e.sync(t, pod).Error(), "back-off 20s")
	_, api = e.status(t, pod)
	if api.ContainerStatuses[0].RestartCount != 2 {
		t.Errorf("restartCount = %d, want 2", api.ContainerStatuses[0].RestartCount)
	}
}

func TestIntegrationHashChangeRestartsOnlyThatContainer(t *testing.T) {
	e := newProcEnv(t)
	pod := shPod("web", map[string]string{"a": "exec sleep 300", "b": "exec sleep 300"}, "a", "b")
	running := func(s v1.PodStatus) error {
		for _, cs := range s.ContainerStatuses {
			if cs.State.Running == nil {
				return fmt.Errorf("%s not running", cs.Name)
			}
		}
		return nil
	}
	before := e.syncUntil(t, pod, running)

	pod.Spec.Containers[1].Env = []v1.EnvVar{{Name: "VERSION", Value: "2"}}
	if err := e.sync(t, pod).Error(); err != nil {
		t.Fatalf("sync after spec change: %v", err)
	}
	after := e.syncUntil(t, pod, running)
	if after.ContainerStatuses[0].ContainerID != before.ContainerStatuses[0].ContainerID {
		t.Error("unchanged container a was restarted")
	}
	b := after.ContainerStatuses[1]
	if b.ContainerID == before.ContainerStatuses[1].ContainerID || b.RestartCount != 1 {
		t.Errorf("container b: id %s restartCount %d, want a new instance with restartCount 1", b.ContainerID, b.RestartCount)
	}
}

func TestIntegrationKillPodGracePeriod(t *testing.T) {
	e := newProcEnv(t)
	ready := filepath.Join(t.TempDir(), "trapped")
	pod := shPod("stubborn", map[string]string{"c": `trap "" TERM; touch ` + ready + `; while true; do sleep 0.1; done`}, "c")
	e.syncUntil(t, pod, func(s v1.PodStatus) error {
		if s.ContainerStatuses[0].State.Running == nil {
			return errors.New("not running")
		}
		// TERM before the shell installed its trap would end it.
		if _, err := os.Stat(ready); err != nil {
			return errors.New("TERM not trapped yet")
		}
		return nil
	})
	pods, err := e.m.GetPods(context.Background(), false)
	if err != nil || len(pods) != 1 {
		t.Fatalf("GetPods = %v, %v", pods, err)
	}
	start := time.Now()
	if err := e.m.KillPod(context.Background(), pod, pods[0], i64(2)); err != nil {
		t.Fatalf("KillPod: %v", err)
	}
	took := time.Since(start)
	if took < 1500*time.Millisecond || took > 6*time.Second {
		t.Errorf("KillPod took %s, want about 2 s", took)
	}
	cs := e.waitExited(t, pod, "c")
	if cs.ExitCode != 137 {
		t.Errorf("exit code = %d, want 137 (SIGKILL)", cs.ExitCode)
	}
	if pods, _ := e.m.GetPods(context.Background(), false); len(pods) != 0 {
		t.Errorf("running pods after kill: %d", len(pods))
	}
}

func TestIntegrationMissingBinary(t *testing.T) {
	e := newProcEnv(t)
	pod := newPod("broken")
	pod.Spec.Containers = []v1.Container{{Name: "c", Image: "local/none:1", Command: []string{"/nonexistent/binary"}}}

	err := e.sync(t, pod).Error()
	if !errors.Is(err, ErrRunContainer) {
		t.Fatalf("error = %v, want RunContainerError", err)
	}
	st, api := e.status(t, pod)
	if cs := st.FindContainerStatusByName("c"); cs == nil || cs.Reason != "StartError" {
		t.Errorf("runtime status = %+v, want reason StartError", cs)
	}
	cs := api.ContainerStatuses[0]
	if cs.State.Waiting == nil || cs.State.Waiting.Reason != "RunContainerError" {
		t.Errorf("state = %+v, want waiting RunContainerError", cs.State)
	}
	if cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.Reason != "StartError" {
		t.Errorf("last state = %+v, want terminated StartError", cs.LastTerminationState)
	}
	if api.Phase != v1.PodPending && api.Phase != v1.PodRunning {
		t.Errorf("phase = %s", api.Phase)
	}
	e.rec.Expect(t, "Failed")
}

// An operator's restart stops the instance and clears its crash back-off:
// repeated restarts start a new instance at once every time, where the same
// number of crashes would be in CrashLoopBackOff.
func TestIntegrationRestartContainerIsNotACrash(t *testing.T) {
	e := newProcEnv(t)
	pod := shPod("restart", map[string]string{"c": "sleep 3600"}, "c")
	e.syncUntil(t, pod, func(s v1.PodStatus) error {
		if s.Phase != v1.PodRunning {
			return fmt.Errorf("phase %s", s.Phase)
		}
		return nil
	})
	for i := 1; i <= 3; i++ {
		st, _ := e.status(t, pod)
		running := st.FindContainerStatusByName("c")
		if err := e.m.RestartContainer(context.Background(), pod, running.ID, "c"); err != nil {
			t.Fatalf("restart %d: %v", i, err)
		}
		if err := e.sync(t, pod).Error(); err != nil {
			t.Fatalf("sync after restart %d must start a new instance at once, got %v", i, err)
		}
		_, api := e.status(t, pod)
		cs := api.ContainerStatuses[0]
		if cs.State.Running == nil || int(cs.RestartCount) != i {
			t.Fatalf("after restart %d: state %+v restartCount %d", i, cs.State, cs.RestartCount)
		}
	}
}
