package kuberuntime

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/test/testutil"
)

// The status a runtime's container event carries (the process runtime's,
// as containerd 2.x's) is the one a read of the pod gives: same sandbox,
// same containers with the same states, exit codes and restart counts.
// An event without the runtime's time (one a client assembled, such as
// the containerd 1.6 adapter's) or without its sandbox is no snapshot.
func TestPodStatusFromEventMatchesRead(t *testing.T) {
	e := newProcEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := make(chan *runtimeapi.ContainerEventResponse, 256)
	established := make(chan struct{})
	go func() {
		_ = e.m.rt.GetContainerEvents(ctx, ch, func(runtimeapi.RuntimeService_GetContainerEventsClient) { close(established) })
	}()
	select {
	case <-established:
	case <-time.After(10 * time.Second):
		t.Fatal("no container event stream")
	}

	pod := shPod("evented", map[string]string{"a": "exec sleep 300", "b": "exit 3"}, "a", "b")
	e.syncUntilRunning(t, pod)
	e.waitExited(t, pod, "b")
	// The newest event of the pod's once b exited (its stop).
	var last *runtimeapi.ContainerEventResponse
	testutil.Eventually(t, 10*time.Second, func() error {
		for {
			select {
			case ev := <-ch:
				if ev.GetPodSandboxStatus().GetMetadata().GetUid() == string(pod.UID) {
					last = ev
				}
				continue
			default:
			}
			break
		}
		if last.GetContainerEventType() != runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT || len(last.GetContainersStatuses()) < 2 {
			return fmt.Errorf("newest event of the pod: %v", last)
		}
		return nil
	})
	got, ok := e.m.PodStatusFromEvent(last)
	if !ok {
		t.Fatalf("PodStatusFromEvent(%v) = false", last)
	}
	want, _ := e.status(t, pod)
	if got.ID != want.ID || got.Name != want.Name || got.Namespace != want.Namespace {
		t.Errorf("pod %s %s/%s, want %s %s/%s", got.ID, got.Namespace, got.Name, want.ID, want.Namespace, want.Name)
	}
	if len(got.SandboxStatuses) != 1 || got.SandboxStatuses[0].GetId() != want.SandboxStatuses[0].GetId() || fmt.Sprint(got.IPs) != fmt.Sprint(want.IPs) {
		t.Errorf("sandboxes %v IPs %v, want the newest of %v, IPs %v", got.SandboxStatuses, got.IPs, want.SandboxStatuses, want.IPs)
	}
	if len(got.ContainerStatuses) != len(want.ContainerStatuses) {
		t.Fatalf("%d containers from the event, %d read", len(got.ContainerStatuses), len(want.ContainerStatuses))
	}
	for i, w := range want.ContainerStatuses {
		g := got.ContainerStatuses[i]
		if g.ID != w.ID || g.Name != w.Name || g.State != w.State || g.ExitCode != w.ExitCode || g.Hash != w.Hash ||
			g.RestartCount != w.RestartCount || g.Reason != w.Reason || !g.StartedAt.Equal(w.StartedAt) || !g.FinishedAt.Equal(w.FinishedAt) {
			t.Errorf("container %d from the event %+v, read %+v", i, g, w)
		}
	}
	if b := got.FindContainerStatusByName("b"); b == nil || b.State != cri.ContainerStateExited || b.ExitCode != 3 {
		t.Errorf("b from the event: %+v, want exited with 3", b)
	}

	assembled := proto.Clone(last).(*runtimeapi.ContainerEventResponse)
	assembled.CreatedAt = 0
	if _, ok := e.m.PodStatusFromEvent(assembled); ok {
		t.Error("an event without the runtime's time was taken as a snapshot")
	}
	noSandbox := proto.Clone(last).(*runtimeapi.ContainerEventResponse)
	noSandbox.PodSandboxStatus = &runtimeapi.PodSandboxStatus{Metadata: last.GetPodSandboxStatus().GetMetadata()}
	if _, ok := e.m.PodStatusFromEvent(noSandbox); ok {
		t.Error("an event without its sandbox's status was taken as a snapshot")
	}
}
