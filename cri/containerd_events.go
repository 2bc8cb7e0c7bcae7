package cri

import (
	"context"
	"fmt"
	"time"

	eventtypes "github.com/containerd/containerd/api/events"
	eventsapi "github.com/containerd/containerd/api/services/events/v1"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// What GetContainerEvents follows (Client.eventSource).
const (
	eventSourceUnknown int32 = iota
	eventSourceCRI
	eventSourceContainerd
	eventSourceNone
)

// EventSource names what the client's container events come from: "cri"
// (GetContainerEvents), "containerd" (containerd's own event service, on
// containerd 1.6), "none" (the runtime has neither: relisting only), or
// "unknown" before the first attempt.
func (c *Client) EventSource() string {
	switch c.eventSource.Load() {
	case eventSourceCRI:
		return "cri"
	case eventSourceContainerd:
		return "containerd"
	case eventSourceNone:
		return "none"
	}
	return "unknown"
}

// containerdNamespace is the containerd namespace of CRI's pods and
// containers.
const containerdNamespace = "k8s.io"

// containerdEventFilter selects the task events of CRI's namespace that
// change a container's state: starts and exits. A container's creation is
// the agent's own doing and changes no state a sync waits for (the kubelet's
// PLEGs report no event for it either), so it is not followed: at a 100-pod
// start that is half the pod inspections the events cost.
var containerdEventFilter = fmt.Sprintf(`namespace==%s,topic~="^/tasks/(start|exit)$"`, containerdNamespace)

// containerdEvents follows containerd's own event service (Subscribe on the
// CRI socket) and turns each task start and task exit
// into the CRI container event it stands for, with the pod it belongs to
// looked up through CRI. Events of exec processes are skipped.
func (c *Client) containerdEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, established func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := eventsapi.NewEventsClient(c.conn).Subscribe(ctx, &eventsapi.SubscribeRequest{Filters: []string{containerdEventFilter}})
	if err != nil {
		return fmt.Errorf("containerd events Subscribe: %w", err)
	}
	// An unknown service fails the first receive at once; a working
	// subscription sends nothing until something changes. Subscribing
	// cannot be told apart from a quiet stream otherwise, so the stream
	// counts as established once the subscribe call is accepted.
	if c.eventSource.Swap(eventSourceContainerd) != eventSourceContainerd {
		klog.InfoS("Container events: containerd's event service (CRI GetContainerEvents is not implemented)", "endpoint", c.endpoint)
	}
	if established != nil {
		established(nil)
	}
	for {
		env, err := stream.Recv()
		if err != nil {
			return fmt.Errorf("containerd events: %w", eofAsUnexpected(err))
		}
		ev := c.fromContainerdEvent(ctx, env.GetTopic(), env.GetEvent().GetValue())
		if ev == nil {
			klog.V(5).InfoS("Skipping containerd event", "topic", env.GetTopic())
			continue
		}
		klog.V(5).InfoS("Container event from containerd", "topic", env.GetTopic(), "containerID", ev.GetContainerId(), "type", ev.GetContainerEventType())
		if ts := env.GetTimestamp(); ts != nil {
			ev.CreatedAt = ts.AsTime().UnixNano()
		}
		select {
		case ch <- ev:
		case <-ctx.Done():
			return fmt.Errorf("containerd events: %w", ctx.Err())
		}
	}
}

// fromContainerdEvent decodes a containerd event by its topic and returns
// the CRI event for it, or nil when it is not a container's own state change
// (an exec process) or its container is gone.
func (c *Client) fromContainerdEvent(ctx context.Context, topic string, payload []byte) *runtimeapi.ContainerEventResponse {
	var id string
	var t runtimeapi.ContainerEventType
	switch topic {
	case "/tasks/start":
		var e eventtypes.TaskStart
		if proto.Unmarshal(payload, &e) != nil {
			return nil
		}
		id, t = e.GetContainerID(), runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT
	case "/tasks/exit":
		var e eventtypes.TaskExit
		if proto.Unmarshal(payload, &e) != nil || (e.GetID() != "" && e.GetID() != e.GetContainerID()) {
			return nil // undecodable, or an exec process
		}
		id, t = e.GetContainerID(), runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT
	default:
		return nil
	}
	if id == "" {
		return nil
	}
	return c.withPod(ctx, id, t)
}

// withPod builds the CRI event for container (or sandbox) id, naming its
// pod as CRI's own events do.
func (c *Client) withPod(ctx context.Context, id string, t runtimeapi.ContainerEventType) *runtimeapi.ContainerEventResponse {
	cs, err := c.ContainerStatus(ctx, id, false)
	if t == runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT {
		cs, err = c.awaitExited(ctx, id, cs, err)
	}
	if err == nil && cs.GetStatus() != nil {
		labels := cs.GetStatus().GetLabels()
		return &runtimeapi.ContainerEventResponse{
			ContainerId:        id,
			ContainerEventType: t,
			PodSandboxStatus: &runtimeapi.PodSandboxStatus{
				Metadata: &runtimeapi.PodSandboxMetadata{
					Uid:       labels[LabelPodUID],
					Name:      labels[LabelPodName],
					Namespace: labels[LabelPodNamespace],
				},
				Labels: labels,
			},
			ContainersStatuses: []*runtimeapi.ContainerStatus{cs.GetStatus()},
		}
	} else if !IsNotFound(err) {
		klog.V(4).InfoS("Inspecting container after a containerd event failed", "containerID", id, "err", err)
		return nil
	}
	// Not a container of CRI's: the sandbox's own task (its pause process).
	sb, err := c.PodSandboxStatus(ctx, id, false)
	if err != nil || sb.GetStatus() == nil {
		return nil // removed meanwhile: the next relist sees it
	}
	return &runtimeapi.ContainerEventResponse{ContainerId: id, ContainerEventType: t, PodSandboxStatus: sb.GetStatus()}
}

// exitSettleTimeout bounds the wait for CRI to show a container exited after
// containerd reported its task's exit, and exitSettlePoll is how often CRI is
// asked meanwhile. containerd's CRI plugin learns of the exit from the same
// event stream and updates its own store a moment later: a status read at
// once still says running, and a pod synced on it would not be restarted
// until the next relist.
const (
	exitSettleTimeout = time.Second
	exitSettlePoll    = 5 * time.Millisecond
)

// awaitExited asks CRI for container id's status until it is no longer
// running (or gone), at most exitSettleTimeout; cs and err are the first
// answer.
func (c *Client) awaitExited(ctx context.Context, id string, cs *runtimeapi.ContainerStatusResponse, err error) (*runtimeapi.ContainerStatusResponse, error) {
	deadline := time.Now().Add(exitSettleTimeout)
	for err == nil && cs.GetStatus().GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING && time.Now().Before(deadline) {
		select {
		case <-time.After(exitSettlePoll):
		case <-ctx.Done():
			return cs, ctx.Err()
		}
		cs, err = c.ContainerStatus(ctx, id, false)
	}
	return cs, err
}
