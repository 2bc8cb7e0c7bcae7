package cri_test

import (
	"context"
	"sync"
	"testing"
	"time"

	eventtypes "github.com/containerd/containerd/api/events"
	eventsapi "github.com/containerd/containerd/api/services/events/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/timestamppb"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
)

// containerd16 stands in for containerd 1.6 where a test needs what the real
// one only does by chance: its CRI plugin lagging behind its own event
// service. CRI GetContainerEvents is Unimplemented (as on 1.6); the
// containers' CRI states are what the test sets; Subscribe streams the
// events the test sends.
type containerd16 struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	eventsapi.UnimplementedEventsServer
	events chan *eventsapi.Envelope
	// cri, when set, makes it a containerd 2.x: GetContainerEvents streams
	// what the test sends on it.
	cri chan *runtimeapi.ContainerEventResponse

	mu         sync.Mutex
	containers map[string]*runtimeapi.ContainerStatus
	statusRead int // ContainerStatus calls
}

func (f *containerd16) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: "containerd", RuntimeApiVersion: "v1"}, nil
}

func (f *containerd16) ContainerStatus(_ context.Context, r *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statusRead++
	s, ok := f.containers[r.GetContainerId()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "container %q not found", r.GetContainerId())
	}
	return &runtimeapi.ContainerStatusResponse{Status: proto.Clone(s).(*runtimeapi.ContainerStatus)}, nil
}

func (f *containerd16) ListContainers(_ context.Context, r *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*runtimeapi.Container
	for id, s := range f.containers {
		if st := r.GetFilter().GetState(); st != nil && st.GetState() != s.GetState() {
			continue
		}
		out = append(out, &runtimeapi.Container{Id: id, State: s.GetState(), Labels: s.GetLabels()})
	}
	return &runtimeapi.ListContainersResponse{Containers: out}, nil
}

func (f *containerd16) Subscribe(_ *eventsapi.SubscribeRequest, stream eventsapi.Events_SubscribeServer) error {
	return forward(stream.Context(), f.events, stream.Send)
}

func (f *containerd16) GetContainerEvents(_ *runtimeapi.GetEventsRequest, stream runtimeapi.RuntimeService_GetContainerEventsServer) error {
	if f.cri == nil {
		return status.Error(codes.Unimplemented, "method GetContainerEvents not implemented")
	}
	return forward(stream.Context(), f.cri, stream.Send)
}

// forward sends what arrives on ch with send until send fails or ctx ends.
func forward[T any](ctx context.Context, ch <-chan T, send func(T) error) error {
	for {
		select {
		case v := <-ch:
			if err := send(v); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (f *containerd16) reads() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.statusRead
}

// send queues a containerd event of topic.
func (f *containerd16) send(t *testing.T, topic string, ev proto.Message) {
	t.Helper()
	b, err := proto.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	f.events <- &eventsapi.Envelope{Timestamp: timestamppb.Now(), Namespace: "k8s.io", Topic: topic, Event: &anypb.Any{Value: b}}
}

// startContainerd16 serves a containerd16 with one running container, c1 of
// pod p1, and follows its events with a client.
func startContainerd16(t *testing.T) (*containerd16, *cri.Client, chan *runtimeapi.ContainerEventResponse) {
	return startContainerd(t, nil)
}

// startContainerd is startContainerd16, a containerd 2.x when criEvents is
// set.
func startContainerd(t *testing.T, criEvents chan *runtimeapi.ContainerEventResponse) (*containerd16, *cri.Client, chan *runtimeapi.ContainerEventResponse) {
	t.Helper()
	f := &containerd16{events: make(chan *eventsapi.Envelope, 16), cri: criEvents, containers: map[string]*runtimeapi.ContainerStatus{
		"c1": {
			Id: "c1", State: runtimeapi.ContainerState_CONTAINER_RUNNING, StartedAt: time.Unix(100, 0).UnixNano(),
			Metadata: &runtimeapi.ContainerMetadata{Name: "main"},
			Labels:   map[string]string{cri.LabelPodUID: "uid-1", cri.LabelPodName: "p1", cri.LabelPodNamespace: "ns"},
		},
	}}
	c := dial(t, serve(t, func(s *grpc.Server) {
		runtimeapi.RegisterRuntimeServiceServer(s, f)
		eventsapi.RegisterEventsServer(s, f)
	}))
	ch := make(chan *runtimeapi.ContainerEventResponse, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.GetContainerEvents(ctx, ch, nil) }()
	t.Cleanup(func() { cancel(); <-done })
	return f, c, ch
}

func receive(t *testing.T, ch chan *runtimeapi.ContainerEventResponse) *runtimeapi.ContainerEventResponse {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no container event")
		return nil
	}
}

// A task exit whose container CRI still shows running (its plugin has not
// caught up, here never does): the event, and every read through the
// client after it, show the container exited with the exit's status, time
// and reason, from one ContainerStatus read and no asking again.
func TestContainerdExitShownBeforeCRICatchesUp(t *testing.T) {
	exitedAt := time.Unix(200, 0)
	for _, tc := range []struct {
		name   string
		oom    bool
		status uint32
		reason string
	}{
		{"error", false, 3, "Error"},
		{"completed", false, 0, "Completed"},
		{"oom killed", true, 137, "OOMKilled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, c, ch := startContainerd16(t)
			if tc.oom {
				f.send(t, "/tasks/oom", &eventtypes.TaskOOM{ContainerID: "c1"})
			}
			f.send(t, "/tasks/exit", &eventtypes.TaskExit{ContainerID: "c1", ID: "c1", Pid: 42, ExitStatus: tc.status, ExitedAt: timestamppb.New(exitedAt)})
			ev := receive(t, ch)
			if ev.GetContainerEventType() != runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT || ev.GetPodSandboxStatus().GetMetadata().GetUid() != "uid-1" {
				t.Fatalf("event %v, want c1 of uid-1 stopped", ev)
			}
			if n := f.reads(); n != 1 {
				t.Errorf("%d ContainerStatus reads for one exit, want 1 (no polling)", n)
			}
			check := func(what string, s *runtimeapi.ContainerStatus) {
				t.Helper()
				if s.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED || s.GetExitCode() != int32(tc.status) ||
					s.GetFinishedAt() != exitedAt.UnixNano() || s.GetReason() != tc.reason || s.GetStartedAt() != time.Unix(100, 0).UnixNano() {
					t.Errorf("%s: state %v exit %d finished %d reason %q started %d; want exited, %d, %d, %q, the start kept",
						what, s.GetState(), s.GetExitCode(), s.GetFinishedAt(), s.GetReason(), s.GetStartedAt(), tc.status, exitedAt.UnixNano(), tc.reason)
				}
			}
			check("event", ev.GetContainersStatuses()[0])
			resp, err := c.ContainerStatus(context.Background(), "c1", false)
			if err != nil {
				t.Fatal(err)
			}
			check("ContainerStatus", resp.GetStatus())

			all, err := c.ListContainers(context.Background(), nil)
			if err != nil || len(all) != 1 || all[0].GetState() != runtimeapi.ContainerState_CONTAINER_EXITED {
				t.Errorf("ListContainers = %v, %v; want c1 exited", all, err)
			}
			running, err := c.ListContainers(context.Background(), &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
			if err != nil || len(running) != 0 {
				t.Errorf("ListContainers(running) = %v, %v; want none", running, err)
			}
		})
	}
}

// Once CRI shows the exit, its answer stands (its reason and time, not the
// event's).
func TestContainerdExitCRIAnswerWins(t *testing.T) {
	f, _, ch := startContainerd16(t)
	f.mu.Lock()
	s := f.containers["c1"]
	s.State, s.ExitCode, s.FinishedAt, s.Reason = runtimeapi.ContainerState_CONTAINER_EXITED, 2, time.Unix(300, 0).UnixNano(), "FromCRI"
	f.mu.Unlock()
	f.send(t, "/tasks/exit", &eventtypes.TaskExit{ContainerID: "c1", ExitStatus: 9, ExitedAt: timestamppb.New(time.Unix(200, 0))})
	got := receive(t, ch).GetContainersStatuses()[0]
	if got.GetExitCode() != 2 || got.GetReason() != "FromCRI" || got.GetFinishedAt() != time.Unix(300, 0).UnixNano() {
		t.Errorf("status %v, want CRI's own (exit 2, FromCRI)", got)
	}
}

// An exec process's exit is no container exit: nothing is reported and the
// container still runs.
func TestContainerdExecExitIgnored(t *testing.T) {
	f, c, ch := startContainerd16(t)
	f.send(t, "/tasks/exit", &eventtypes.TaskExit{ContainerID: "c1", ID: "exec-1", ExitStatus: 1})
	f.send(t, "/tasks/start", &eventtypes.TaskStart{ContainerID: "c1", Pid: 42})
	if ev := receive(t, ch); ev.GetContainerEventType() != runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT {
		t.Fatalf("first event %v, want the start (the exec's exit skipped)", ev)
	}
	resp, err := c.ContainerStatus(context.Background(), "c1", false)
	if err != nil || resp.GetStatus().GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("ContainerStatus = %v, %v; want running", resp, err)
	}
}

// On a runtime with CRI events that also serves containerd's event service
// (containerd 2.x, whose CRI plugin sends a stop event only after deleting
// the task), a task exit is reported at once from the event service; CRI's
// own events, its later stop of the same container included, pass as they
// come.
func TestContainerd2ExitReportedBeforeCRIStopEvent(t *testing.T) {
	criEvents := make(chan *runtimeapi.ContainerEventResponse, 16)
	f, c, ch := startContainerd(t, criEvents)
	sandbox := &runtimeapi.PodSandboxStatus{Id: "sb1", Metadata: &runtimeapi.PodSandboxMetadata{Uid: "uid-1", Name: "p1", Namespace: "ns"}}
	criEvent := func(id string, typ runtimeapi.ContainerEventType) *runtimeapi.ContainerEventResponse {
		return &runtimeapi.ContainerEventResponse{ContainerId: id, ContainerEventType: typ, PodSandboxStatus: sandbox}
	}
	// The CRI stream is taken as working once it stays open for a moment.
	deadline := time.Now().Add(30 * time.Second)
	for c.EventSource() != "cri" {
		if time.Now().After(deadline) {
			t.Fatalf("event source %q, want cri", c.EventSource())
		}
		time.Sleep(10 * time.Millisecond)
	}

	f.send(t, "/tasks/exit", &eventtypes.TaskExit{ContainerID: "c1", ID: "c1", ExitStatus: 3, ExitedAt: timestamppb.New(time.Unix(200, 0))})
	ev := receive(t, ch)
	if ev.GetContainerEventType() != runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT || ev.GetContainersStatuses()[0].GetState() != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Fatalf("first event %v, want c1 stopped and exited, from the task exit", ev)
	}
	if got := c.EventSource(); got != "cri" {
		t.Errorf("event source %q after a containerd task exit, want cri", got)
	}

	criEvents <- criEvent("c1", runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
	criEvents <- criEvent("c2", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	for _, want := range []string{"c1", "c2"} {
		if ev := receive(t, ch); ev.GetContainerId() != want {
			t.Fatalf("event of %s (%v), want %s", ev.GetContainerId(), ev.GetContainerEventType(), want)
		}
	}
}

// containerd 1.6: the task's deletion after its exit (the CRI plugin's,
// before it shows the exit) is reported as a second stop event; an exec's
// is not.
func TestContainerdTaskDeleteReportedAsStop(t *testing.T) {
	f, _, ch := startContainerd16(t)
	f.send(t, "/tasks/exit", &eventtypes.TaskExit{ContainerID: "c1", ID: "c1", ExitStatus: 3, ExitedAt: timestamppb.New(time.Unix(200, 0))})
	f.send(t, "/tasks/delete", &eventtypes.TaskDelete{ContainerID: "c1", ID: "exec-1", ExitStatus: 1})
	f.send(t, "/tasks/delete", &eventtypes.TaskDelete{ContainerID: "c1", ExitStatus: 3, ExitedAt: timestamppb.New(time.Unix(200, 0))})
	f.send(t, "/tasks/start", &eventtypes.TaskStart{ContainerID: "c1", Pid: 42})
	for i, want := range []runtimeapi.ContainerEventType{
		runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, // the exit
		runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, // the deletion (the exec's skipped)
		runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT,
	} {
		ev := receive(t, ch)
		if ev.GetContainerEventType() != want {
			t.Fatalf("event %d: %v, want %v", i, ev.GetContainerEventType(), want)
		}
		if want == runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT && ev.GetContainersStatuses()[0].GetState() != runtimeapi.ContainerState_CONTAINER_EXITED {
			t.Errorf("event %d: container %v, want exited", i, ev.GetContainersStatuses()[0].GetState())
		}
	}
}
