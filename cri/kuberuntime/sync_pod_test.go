package kuberuntime

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages/podrules"
)

func TestSyncPodStartsFreshPod(t *testing.T) {
	e := newEnv(t)
	pod := newPod("web", "app", "sidecar")

	st, err := e.m.GetPodStatus(context.Background(), pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	if e.m.ConvertPodStatus(pod, st).SandboxReady {
		t.Error("SandboxReady before any sandbox exists")
	}
	res := e.sync(t, pod, nil)
	if err := res.Error(); err != nil {
		t.Fatalf("SyncPod: %v", err)
	}
	if !res.SandboxCreated {
		t.Error("SandboxCreated = false, want true")
	}
	if st, _ = e.status(t, pod); !e.m.ConvertPodStatus(pod, st).SandboxReady {
		t.Error("SandboxReady = false after the sandbox was created")
	}
	if got := e.rt.count("StartContainer"); got != 2 {
		t.Errorf("StartContainer calls = %d, want 2", got)
	}
	_, api := e.status(t, pod)
	if api.Phase != v1.PodRunning {
		t.Errorf("phase = %s, want Running", api.Phase)
	}
	if api.PodIP == "" || api.StartTime == nil {
		t.Errorf("podIP %q startTime %v: want both set", api.PodIP, api.StartTime)
	}
	for _, cs := range api.ContainerStatuses {
		if cs.State.Running == nil || cs.Ready || !strings.HasPrefix(cs.ContainerID, "fakeRuntime://") {
			t.Errorf("container %s: state %+v ready %t id %q", cs.Name, cs.State, cs.Ready, cs.ContainerID)
		}
	}
	e.rec.Expect(t, "Pulling", "Pulled", "Created", "Started")

	// A second pass has nothing to do.
	calls := len(e.rt.FakeRuntimeService.GetCalls())
	if err := e.sync(t, pod, nil).Error(); err != nil {
		t.Fatalf("second SyncPod: %v", err)
	}
	for _, c := range e.rt.FakeRuntimeService.GetCalls()[calls:] {
		if c == "CreateContainer" || c == "RunPodSandbox" || c == "StopContainer" {
			t.Errorf("steady-state sync called %s", c)
		}
	}
}

func TestSyncPodSandboxCreationFails(t *testing.T) {
	e := newEnv(t)
	pod := newPod("web", "app")
	e.rt.FakeRuntimeService.InjectError("RunPodSandbox", errors.New("no network"))

	res := e.sync(t, pod, nil)
	err := res.Error()
	if !errors.Is(err, ErrCreatePodSandbox) {
		t.Fatalf("error = %v, want ErrCreatePodSandbox", err)
	}
	if n := e.rt.count("CreateContainer"); n != 0 {
		t.Errorf("CreateContainer calls = %d, want 0", n)
	}
	e.rec.Expect(t, "FailedCreatePodSandBox")
}

func TestSyncPodImagePullBackOff(t *testing.T) {
	e := newEnv(t)
	pod := newPod("web", "app")
	pod.Spec.Containers[0].Image = "registry.example/app:latest" // Always
	e.rt.FakeImageService.InjectError("PullImage", errors.New("registry down"))

	if err := e.sync(t, pod, nil).Error(); !errors.Is(err, ErrImagePull) {
		t.Fatalf("first sync error = %v, want ErrImagePull", err)
	}
	_, api := e.status(t, pod)
	if w := api.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "ErrImagePull" {
		t.Errorf("waiting = %+v, want ErrImagePull", w)
	}

	pulls := e.rt.imageCalls("PullImage")
	if err := e.sync(t, pod, nil).Error(); !errors.Is(err, ErrImagePullBackOff) {
		t.Fatalf("second sync error = %v, want ErrImagePullBackOff", err)
	}
	if e.rt.imageCalls("PullImage") != pulls {
		t.Error("pulled again while in back-off")
	}
	_, api = e.status(t, pod)
	if w := api.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "ImagePullBackOff" {
		t.Errorf("waiting = %+v, want ImagePullBackOff", w)
	}
	if api.Phase != v1.PodPending {
		t.Errorf("phase = %s, want Pending", api.Phase)
	}

	e.clock.Step(11 * time.Second)
	if err := e.sync(t, pod, nil).Error(); err != nil {
		t.Fatalf("sync after back-off: %v", err)
	}
	_, api = e.status(t, pod)
	if api.ContainerStatuses[0].State.Running == nil {
		t.Errorf("state = %+v, want running", api.ContainerStatuses[0].State)
	}
}

func TestSyncPodImageNeverPull(t *testing.T) {
	e := newEnv(t)
	pod := newPod("web", "app")
	pod.Spec.Containers[0].ImagePullPolicy = v1.PullNever
	if err := e.sync(t, pod, nil).Error(); !errors.Is(err, ErrImageNeverPull) {
		t.Fatalf("error = %v, want ErrImageNeverPull", err)
	}
	if e.rt.imageCalls("PullImage") != 0 {
		t.Error("pulled an image with policy Never")
	}
	e.rt.FakeImageService.SetFakeImages([]string{"busybox:1.36"})
	if err := e.sync(t, pod, nil).Error(); err != nil {
		t.Fatalf("with the image present: %v", err)
	}
}

func TestRuntimeUnavailableErrorsWrapCode(t *testing.T) {
	e := newEnv(t)
	pod := newPod("web", "app")
	unavailable := status.Error(codes.Unavailable, "connection refused")

	e.rt.FakeRuntimeService.InjectError("ListPodSandbox", unavailable)
	_, err := e.m.GetPodStatus(context.Background(), pod.UID, pod.Name, pod.Namespace)
	if status.Code(err) != codes.Unavailable {
		t.Errorf("GetPodStatus error %v: code %s, want Unavailable", err, status.Code(err))
	}

	e.rt.FakeRuntimeService.InjectError("RunPodSandbox", unavailable)
	err = e.m.SyncPod(context.Background(), pod, nil, nil).Error()
	if status.Code(err) != codes.Unavailable || !errors.Is(err, ErrCreatePodSandbox) {
		t.Errorf("SyncPod error %v: code %s, want Unavailable and ErrCreatePodSandbox", err, status.Code(err))
	}
}

func TestCrashLoopBackOff(t *testing.T) {
	e := newEnv(t)
	pod := newPod("web", "app")
	if err := e.sync(t, pod, nil).Error(); err != nil {
		t.Fatal(err)
	}
	crash := func() {
		t.Helper()
		st, _ := e.status(t, pod)
		e.rt.exitContainer(t, st.FindContainerStatusByName("app").ID, 1, e.clock.Now())
	}

	// First death: restarted at once; the back-off becomes 10 s.
	crash()
	if err := e.sync(t, pod, nil).Error(); err != nil {
		t.Fatalf("first restart: %v", err)
	}
	_, api := e.status(t, pod)
	if cs := api.ContainerStatuses[0]; cs.RestartCount != 1 || cs.State.Running == nil || cs.LastTerminationState.Terminated == nil {
		t.Fatalf("after first restart: %+v", cs)
	}

	// Second death: within 10 s → CrashLoopBackOff.
	crash()
	wantCrashLoop(t, e.sync(t, pod, nil).Error(), "back-off 10s restarting failed container=app")
	_, api = e.status(t, pod)
	cs := api.ContainerStatuses[0]
	if cs.State.Waiting == nil || cs.State.Waiting.Reason != "CrashLoopBackOff" || cs.LastTerminationState.Terminated == nil {
		t.Errorf("status = %+v, want waiting CrashLoopBackOff with last state", cs)
	}
	if api.Phase != v1.PodRunning {
		t.Errorf("phase = %s, want Running (restartPolicy Always)", api.Phase)
	}
	if end := e.m.BackOffs(pod.UID)["app"]; end.IsZero() {
		t.Error("BackOffs has no entry for app")
	}
	e.rec.Expect(t, "BackOff")

	e.clock.Step(11 * time.Second)
	if err := e.sync(t, pod, nil).Error(); err != nil {
		t.Fatalf("restart after 10 s: %v", err)
	}
	// Third death: the back-off doubled.
	crash()
	wantCrashLoop(t, e.sync(t, pod, nil).Error(), "back-off 20s")
	_, api = e.status(t, pod)
	if api.ContainerStatuses[0].RestartCount != 2 {
		t.Errorf("restartCount = %d, want 2", api.ContainerStatuses[0].RestartCount)
	}
}

func TestLivenessFailureRestartsContainer(t *testing.T) {
	e := newEnv(t)
	pod := newPod("web", "app", "other")
	if err := e.sync(t, pod, nil).Error(); err != nil {
		t.Fatal(err)
	}
	st, _ := e.status(t, pod)
	id := st.FindContainerStatusByName("app").ID
	otherID := st.FindContainerStatusByName("other").ID

	if err := e.sync(t, pod, cri.Probes{id: {Failed: true, Message: "HTTP probe failed with statuscode: 500"}}).Error(); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if _, ok := e.rt.stopTimeout(id); !ok {
		t.Error("container with the failed probe was not stopped")
	}
	if _, ok := e.rt.stopTimeout(otherID); ok {
		t.Error("healthy container was stopped")
	}
	if got := len(e.rt.containerIDs("app")); got != 2 {
		t.Errorf("app instances = %d, want 2", got)
	}
	e.rec.Expect(t, "Killing")
}

func TestPostStartHookFailureKillsContainer(t *testing.T) {
	e := newEnv(t)
	pod := newPod("web", "app")
	pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"false"}}}}
	e.rt.FakeRuntimeService.InjectError("ExecSync", errors.New("exit status 1"))

	err := e.sync(t, pod, nil).Error()
	if !errors.Is(err, ErrPostStartHook) {
		t.Fatalf("error = %v, want ErrPostStartHook", err)
	}
	ids := e.rt.containerIDs("app")
	if len(ids) != 1 {
		t.Fatalf("instances = %v", ids)
	}
	if _, ok := e.rt.stopTimeout(ids[0]); !ok {
		t.Error("container was not killed after its postStart hook failed")
	}
	e.rec.Expect(t, "FailedPostStartHook")
}

func TestSyncPodInitContainersInOrder(t *testing.T) {
	e := newEnv(t)
	pod := newPod("web", "app")
	pod.Spec.InitContainers = []v1.Container{{Name: "init1", Image: "busybox:1.36"}, {Name: "init2", Image: "busybox:1.36"}}

	step := func(wantStarted string) {
		t.Helper()
		if err := e.sync(t, pod, nil).Error(); err != nil {
			t.Fatal(err)
		}
		if ids := e.rt.containerIDs(wantStarted); len(ids) != 1 {
			t.Fatalf("%s instances = %v, want 1", wantStarted, ids)
		}
	}
	step("init1")
	if ids := e.rt.containerIDs("app"); len(ids) != 0 {
		t.Fatal("app started before init containers finished")
	}
	_, api := e.status(t, pod)
	if api.Phase != v1.PodPending || api.ContainerStatuses[0].State.Waiting.Reason != "PodInitializing" {
		t.Errorf("phase %s, app %+v: want Pending, PodInitializing", api.Phase, api.ContainerStatuses[0].State)
	}
	e.rt.exitContainer(t, e.rt.containerIDs("init1")[0], 0, e.clock.Now())
	step("init2")
	e.rt.exitContainer(t, e.rt.containerIDs("init2")[0], 0, e.clock.Now())
	step("app")

	_, api = e.status(t, pod)
	if api.Phase != v1.PodRunning {
		t.Errorf("phase = %s, want Running", api.Phase)
	}
	for _, cs := range api.InitContainerStatuses {
		if cs.State.Terminated == nil || cs.State.Terminated.Reason != "Completed" {
			t.Errorf("init %s: %+v, want Completed", cs.Name, cs.State)
		}
	}
	if pending := podrules.IncompleteInitContainers(pod, &api); len(pending) > 0 {
		t.Errorf("Initialized: incomplete init containers %v", pending)
	}
}

func TestSyncPodInitFailureWithNeverFailsPod(t *testing.T) {
	e := newEnv(t)
	pod := newPod("job", "app")
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	pod.Spec.InitContainers = []v1.Container{{Name: "init", Image: "busybox:1.36"}}
	if err := e.sync(t, pod, nil).Error(); err != nil {
		t.Fatal(err)
	}
	e.rt.exitContainer(t, e.rt.containerIDs("init")[0], 3, e.clock.Now())
	res := e.sync(t, pod, nil)
	if !res.PodKilled {
		t.Error("pod was not killed")
	}
	if ids := e.rt.containerIDs("init"); len(ids) != 1 {
		t.Errorf("init restarted: %v", ids)
	}
	_, api := e.status(t, pod)
	if api.Phase != v1.PodFailed {
		t.Errorf("phase = %s, want Failed", api.Phase)
	}
}

// restartedOnce runs pod, whose container "app" then dies and is restarted
// at once (a first restart has no back-off); it returns the second
// instance, running.
func (e *env) restartedOnce(t *testing.T, pod *v1.Pod) *cri.ContainerStatus {
	t.Helper()
	if err := e.sync(t, pod, nil).Error(); err != nil {
		t.Fatal(err)
	}
	st, _ := e.status(t, pod)
	e.rt.exitContainer(t, st.FindContainerStatusByName("app").ID, 1, e.clock.Now())
	if err := e.sync(t, pod, nil).Error(); err != nil {
		t.Fatalf("first restart: %v", err)
	}
	st, _ = e.status(t, pod)
	return st.FindContainerStatusByName("app")
}

// A stale status (PLEG has not seen the exit yet) shows the previous
// instance as not exited: the start path asks the runtime, and a container
// that just died again waits out its back-off instead of being restarted at
// once.
func TestStaleStatusDoesNotBypassCrashLoopBackOff(t *testing.T) {
	e := newEnv(t)
	pod := newPod("web", "app")
	second := e.restartedOnce(t, pod)
	e.rt.exitContainer(t, second.ID, 1, e.clock.Now())

	// The status the sync gets still shows the second instance as created.
	stale, _ := e.status(t, pod)
	for _, cs := range stale.ContainerStatuses {
		if cs.ID == second.ID {
			cs.State, cs.FinishedAt = cri.ContainerStateCreated, time.Time{}
		}
	}
	before := e.rt.count("CreateContainer")
	err := e.m.SyncPod(context.Background(), pod, stale, nil).Error()
	if !errors.Is(err, ErrCrashLoopBackOff) {
		t.Fatalf("error = %v, want CrashLoopBackOff", err)
	}
	if n := e.rt.count("CreateContainer"); n != before {
		t.Fatalf("a new instance was created (%d CreateContainer calls) past the back-off", n-before)
	}
}

// A back-off wait says when it ends, so the pod can be synced again then
// instead of at the next periodic resync.
func TestCrashLoopBackOffErrorCarriesItsEnd(t *testing.T) {
	e := newEnv(t)
	pod := newPod("web", "app")
	second := e.restartedOnce(t, pod)
	finished := e.clock.Now()
	e.rt.exitContainer(t, second.ID, 1, finished)
	err := e.sync(t, pod, nil).Error()
	if !errors.Is(err, ErrCrashLoopBackOff) {
		t.Fatalf("error = %v, want CrashLoopBackOff", err)
	}
	var w interface{ RetryAt() time.Time }
	if !errors.As(err, &w) {
		t.Fatalf("error %v has no RetryAt", err)
	}
	if want := finished.Add(restartBackOffInitial); !w.RetryAt().Equal(want) {
		t.Fatalf("RetryAt = %v, want the finish plus the first back-off, %v", w.RetryAt(), want)
	}
}

// A container stopped by a failed liveness probe is started again in the
// same pass, even while its crash back-off runs: as in the kubelet, whose
// back-off check sees the status the pass acted on, where it still ran.
func TestLivenessKillRestartsInTheSamePassWithoutBackOff(t *testing.T) {
	e := newEnv(t)
	pod := newPod("web", "app")
	if err := e.sync(t, pod, nil).Error(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		st, _ := e.status(t, pod)
		old := st.FindContainerStatusByName("app")
		if old.State != cri.ContainerStateRunning {
			t.Fatalf("round %d: container is %v, want running", i, old.State)
		}
		err := e.sync(t, pod, cri.Probes{old.ID: {Failed: true, Message: "liveness probe failed"}}).Error()
		if err != nil {
			t.Fatalf("round %d: liveness restart: %v", i, err)
		}
		st, _ = e.status(t, pod)
		now := st.FindContainerStatusByName("app")
		if now.ID == old.ID || now.State != cri.ContainerStateRunning {
			t.Fatalf("round %d: after the liveness kill the container is %s %v, want a new running instance", i, now.ID, now.State)
		}
	}
}

// TestNeverRunInitContainerIsPodInitializing: with restartPolicy Never, an
// init container that failed stops the pod; the init container after it,
// never run, and the app container show PodInitializing, as the kubelet
// shows every never-created container of a pod with init containers.
func TestNeverRunInitContainerIsPodInitializing(t *testing.T) {
	e := newEnv(t)
	pod := newPod("job", "app")
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	pod.Spec.InitContainers = []v1.Container{{Name: "first", Image: "busybox:1.36"}, {Name: "second", Image: "busybox:1.36"}}
	if err := e.sync(t, pod, nil).Error(); err != nil {
		t.Fatal(err)
	}
	e.rt.exitContainer(t, e.rt.containerIDs("first")[0], 1, e.clock.Now())
	e.sync(t, pod, nil)
	_, api := e.status(t, pod)
	if api.Phase != v1.PodFailed {
		t.Fatalf("phase = %s, want Failed", api.Phase)
	}
	for _, cs := range append(api.InitContainerStatuses[1:], api.ContainerStatuses...) {
		if cs.State.Waiting == nil || cs.State.Waiting.Reason != reasonPodInitializing {
			t.Errorf("%s: state %+v, want waiting PodInitializing", cs.Name, cs.State)
		}
	}
	// Without init containers a container not created yet is ContainerCreating.
	plain := newPod("plain", "app")
	if _, api := e.status(t, plain); api.ContainerStatuses[0].State.Waiting == nil || api.ContainerStatuses[0].State.Waiting.Reason != reasonContainerCreating {
		t.Errorf("plain pod: %+v, want waiting ContainerCreating", api.ContainerStatuses[0].State)
	}
}
