package kuberuntime

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critesting "k8s.io/cri-api/pkg/apis/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages/podrules"
	"github.com/actorlet/actorlet/test/testutil"
)

// fakeRuntime joins the upstream fakes into one cri.Runtime and records
// StopContainer timeouts.
type fakeRuntime struct {
	*critesting.FakeRuntimeService
	*critesting.FakeImageService

	mu           sync.Mutex
	stopTimeouts map[string]int64
}

var _ cri.Runtime = &fakeRuntime{}

func (f *fakeRuntime) StopContainer(ctx context.Context, id string, timeout int64) error {
	f.mu.Lock()
	f.stopTimeouts[id] = timeout
	f.mu.Unlock()
	return f.FakeRuntimeService.StopContainer(ctx, id, timeout)
}

// RemovePodSandbox removes the sandbox and its containers, as CRI says
// ("any running containers in the sandbox must be forcibly terminated and
// removed") and containerd and the process runtime do; the upstream fake
// leaves the containers behind.
func (f *fakeRuntime) RemovePodSandbox(ctx context.Context, id string) error {
	if err := f.FakeRuntimeService.RemovePodSandbox(ctx, id); err != nil {
		return err
	}
	f.FakeRuntimeService.Lock()
	defer f.FakeRuntimeService.Unlock()
	for cid, c := range f.Containers {
		if c.SandboxID == id {
			delete(f.Containers, cid)
		}
	}
	return nil
}

func (f *fakeRuntime) stopTimeout(id string) (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.stopTimeouts[id]
	return t, ok
}

// count returns how often the runtime service saw call.
func (f *fakeRuntime) count(call string) int {
	n := 0
	for _, c := range f.FakeRuntimeService.GetCalls() {
		if c == call {
			n++
		}
	}
	return n
}

func (f *fakeRuntime) imageCalls(call string) int {
	f.FakeImageService.Lock()
	defer f.FakeImageService.Unlock()
	n := 0
	for _, c := range f.FakeImageService.Called {
		if c == call {
			n++
		}
	}
	return n
}

// exitContainer makes the fake report the container exited with code at
// finished.
func (f *fakeRuntime) exitContainer(t *testing.T, id string, code int32, finished time.Time) {
	t.Helper()
	f.FakeRuntimeService.Lock()
	defer f.FakeRuntimeService.Unlock()
	c, ok := f.Containers[id]
	if !ok {
		t.Fatalf("no container %q in the fake", id)
	}
	c.State = runtimeapi.ContainerState_CONTAINER_EXITED
	c.ExitCode = code
	c.FinishedAt = finished.UnixNano()
}

// containerIDs returns the IDs of the named container's instances.
func (f *fakeRuntime) containerIDs(name string) []string {
	f.FakeRuntimeService.Lock()
	defer f.FakeRuntimeService.Unlock()
	var ids []string
	for id, c := range f.Containers {
		if c.Labels[LabelContainerName] == name {
			ids = append(ids, id)
		}
	}
	return ids
}

type env struct {
	rt    *fakeRuntime
	clock *clocktesting.FakeClock
	rec   *testutil.Recorder
	m     *Manager
}

func newEnv(t *testing.T) *env {
	t.Helper()
	rt := &fakeRuntime{
		FakeRuntimeService: critesting.NewFakeRuntimeService(),
		FakeImageService:   critesting.NewFakeImageService(),
		stopTimeouts:       map[string]int64{},
	}
	clk := clocktesting.NewFakeClock(time.Now())
	rec := &testutil.Recorder{}
	m := NewManager(rt, Options{
		PodLogsDir: t.TempDir(),
		PodsDir:    t.TempDir(),
		HostIP:     "10.0.0.1",
		Clock:      clk,
		Recorder:   rec,
	})
	return &env{rt: rt, clock: clk, rec: rec, m: m}
}

// sync reads the pod status and runs one SyncPod pass.
func (e *env) sync(t *testing.T, pod *v1.Pod, probes cri.Probes) SyncResult {
	t.Helper()
	st, _ := podStatus(t, e.m, pod)
	return e.m.SyncPod(context.Background(), pod, st, probes)
}

func (e *env) status(t *testing.T, pod *v1.Pod) (*cri.PodStatus, v1.PodStatus) {
	t.Helper()
	return podStatus(t, e.m, pod)
}

// podStatus reads the pod's status from m's runtime, and the API status
// apiStatus makes of it.
func podStatus(t *testing.T, m *Manager, pod *v1.Pod) (*cri.PodStatus, v1.PodStatus) {
	t.Helper()
	st, err := m.GetPodStatus(context.Background(), pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatalf("GetPodStatus: %v", err)
	}
	return st, apiStatus(m, pod, st)
}

// drainPod is newPod("web", "app") whose container has an exec preStop
// hook (drain).
func drainPod() *v1.Pod {
	pod := newPod("web", "app")
	pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"drain"}}}}
	return pod
}

// apiStatus is the runtime's part of the API status with the phase the pod
// actor derives from it (podrules.PodPhase).
func apiStatus(m *Manager, pod *v1.Pod, st *cri.PodStatus) v1.PodStatus {
	s := m.ConvertPodStatus(pod, st).Status
	s.Phase = podrules.PodPhase(pod, &s)
	return s
}

func newPod(name string, containers ...string) *v1.Pod {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid"), Labels: map[string]string{"app": name}},
		Spec:       v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways, NodeName: "node-1"},
	}
	for _, c := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: c, Image: "busybox:1.36"})
	}
	return pod
}

// wantCrashLoop fails t unless err is a CrashLoopBackOff whose message has
// want (such as "back-off 20s").
func wantCrashLoop(t *testing.T, err error, want string) {
	t.Helper()
	if !errors.Is(err, ErrCrashLoopBackOff) || !strings.Contains(err.Error(), want) {
		t.Fatalf("error = %v, want CrashLoopBackOff with %q", err, want)
	}
}
