package cri

import (
	"context"
	"fmt"
	"sync"
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
// change a container's state: starts and exits, OOM kills (an exit's
// reason), and task deletions. The CRI plugin deletes an exited container's
// task before it shows the exit: the deletion is reported as a second stop
// event, as containerd 2.x's CRI plugin sends its own stop event then, so
// that a sync that started waiting for status newer than one running when
// the container died (a container that exits right after its start) goes on
// at once rather than at the PLEG cache's next freshness tick. A container's
// creation is the agent's own doing and changes no state a sync waits for
// (the kubelet's PLEGs report no event for it either), so it is not
// followed: at a 100-pod start that is half the pod inspections the events
// cost.
var containerdEventFilter = fmt.Sprintf(`namespace==%s,topic~="^/tasks/(start|exit|oom|delete)$"`, containerdNamespace)

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

// containerdExitFilter selects the task exits and OOM kills of CRI's
// namespace.
var containerdExitFilter = fmt.Sprintf(`namespace==%s,topic~="^/tasks/(exit|oom)$"`, containerdNamespace)

// earlyExits reports container exits from containerd's own event service
// beside CRI's events, where the runtime serves it (containerd 2.x; CRI-O and
// the process runtime do not, and nothing more is done). containerd's CRI
// plugin sends a container's stop event only once it has deleted the task
// (a shim round trip and the rootfs unmount): measured here 0.1–0.4 s after
// the exit on a loaded machine, while the event service publishes the task
// exit within milliseconds. Each exit is recorded (taskExits, so reads
// agree with it) and reported at once. CRI's own stop event still follows
// and is reported too (one more inspection of the pod): a container that
// dies while its pod's sync runs (one that exits at once after its start)
// is reported before that sync ends, so the next sync, which waits for
// status newer than the sync's end, needs CRI's later event to go on
// without waiting for the PLEG cache's next freshness tick (with CRI's
// event dropped, a crash loop's first restart came 0.8 s late instead of
// 0.2 s).
func (c *Client) earlyExits(ctx context.Context, ch chan<- *runtimeapi.ContainerEventResponse) {
	stream, err := eventsapi.NewEventsClient(c.conn).Subscribe(ctx, &eventsapi.SubscribeRequest{Filters: []string{containerdExitFilter}})
	if err != nil {
		return
	}
	for {
		env, err := stream.Recv()
		if err != nil {
			if ctx.Err() == nil && !IsUnimplemented(err) {
				klog.V(4).InfoS("Following containerd's task exits beside CRI events ended", "endpoint", c.endpoint, "err", err)
			}
			return
		}
		ev := c.fromContainerdEvent(ctx, env.GetTopic(), env.GetEvent().GetValue())
		if ev == nil {
			continue
		}
		if ts := env.GetTimestamp(); ts != nil {
			ev.CreatedAt = ts.AsTime().UnixNano()
		}
		klog.V(5).InfoS("Container exit from containerd's event service", "containerID", ev.GetContainerId())
		select {
		case ch <- ev:
		case <-ctx.Done():
			return
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
		if id != "" {
			// Before the read below: every read from now on, the PLEG's
			// inspection of the pod and the pod's sync included, sees the
			// container exited even while CRI still says running.
			now := time.Now()
			at := now
			if ts := e.GetExitedAt(); ts != nil {
				at = ts.AsTime()
			}
			c.exits.exited(id, e.GetExitStatus(), at, now)
		}
	case "/tasks/delete":
		var e eventtypes.TaskDelete
		if proto.Unmarshal(payload, &e) != nil || (e.GetID() != "" && e.GetID() != e.GetContainerID()) {
			return nil // undecodable, or an exec process
		}
		id, t = e.GetContainerID(), runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT
	case "/tasks/oom":
		var e eventtypes.TaskOOM
		if proto.Unmarshal(payload, &e) == nil && e.GetContainerID() != "" {
			c.exits.oomKilled(e.GetContainerID(), time.Now())
		}
		return nil // no state change of its own: the exit follows
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
	cs, err := c.ContainerStatus(ctx, id, false) // after an exit, exited (taskExits)
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

// taskExits holds the container exits containerd's event service reported
// (containerd 1.6), so that CRI reads made before containerd's CRI plugin
// has caught up do not show them running. The plugin learns of an exit
// from the same event stream and updates its store a moment later: a
// ContainerStatus read at once still says running, and a pod synced on it
// would not be restarted until the next relist. Instead of asking CRI again
// until it agrees, the client answers such a read with what the exit event
// said, as the CRI plugin will: state exited, the task's exit status and
// time, reason OOMKilled after a /tasks/oom of the container, else
// Completed (status 0) or Error. A container's state never goes back from
// exited (a restart is a new container), so an answer of exited from CRI
// is always taken as is.
//
// An entry is dropped by a later event once older than taskExitTTL (CRI
// catches up within milliseconds; it is only needed until then), and at
// most maxTaskExits of each kind are held (the oldest dropped first), so a
// flood of events cannot grow the client without bound.
type taskExits struct {
	mu    sync.Mutex
	exits recent[taskExit]
	ooms  recent[struct{}] // containers whose OOM kill was seen
}

type taskExit struct {
	status uint32
	at     time.Time // the task's exit time
}

const (
	taskExitTTL  = time.Minute
	maxTaskExits = 4096
)

// CRI plugin's exit reasons (containerd's internal/cri/server).
const (
	reasonCompleted = "Completed"
	reasonError     = "Error"
	reasonOOMKilled = "OOMKilled"
)

func (x *taskExits) exited(id string, status uint32, at, now time.Time) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.exits.put(id, taskExit{status: status, at: at}, now)
}

func (x *taskExits) oomKilled(id string, now time.Time) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.ooms.put(id, struct{}{}, now)
}

// recent maps container IDs to values put within taskExitTTL, at most
// maxTaskExits of them: order is the puts in time order, and each put first
// drops the entries at its head that are too old or over the bound (O(1)
// amortized).
type recent[V any] struct {
	m     map[string]recentEntry[V]
	order []recentKey
	seq   uint64
}

type recentEntry[V any] struct {
	v   V
	seq uint64
}

type recentKey struct {
	id   string
	seq  uint64
	seen time.Time
}

func (r *recent[V]) put(id string, v V, now time.Time) {
	if r.m == nil {
		r.m = make(map[string]recentEntry[V])
	}
	for len(r.order) > 0 && (len(r.order) >= maxTaskExits || now.Sub(r.order[0].seen) > taskExitTTL) {
		k := r.order[0]
		r.order = r.order[1:]
		if e, ok := r.m[k.id]; ok && e.seq == k.seq { // not put again since
			delete(r.m, k.id)
		}
	}
	r.seq++
	r.m[id] = recentEntry[V]{v: v, seq: r.seq}
	r.order = append(r.order, recentKey{id: id, seq: r.seq, seen: now})
}

func (r *recent[V]) get(id string) (V, bool) {
	e, ok := r.m[id]
	return e.v, ok
}

// status corrects a CRI container status that still says running after its
// task's exit was reported.
func (x *taskExits) status(s *runtimeapi.ContainerStatus) {
	if s.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.exits.get(s.GetId())
	if !ok {
		return
	}
	s.State = runtimeapi.ContainerState_CONTAINER_EXITED
	s.FinishedAt = e.at.UnixNano()
	s.ExitCode = int32(e.status)
	switch _, oom := x.ooms.get(s.GetId()); {
	case oom:
		s.Reason = reasonOOMKilled
	case e.status == 0:
		s.Reason = reasonCompleted
	default:
		s.Reason = reasonError
	}
}

// list corrects the state of listed containers likewise; when the list
// asked for running containers only (onlyRunning), those it corrects are
// dropped.
func (x *taskExits) list(cs []*runtimeapi.Container, onlyRunning bool) []*runtimeapi.Container {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.exits.m) == 0 {
		return cs
	}
	kept := cs[:0]
	for _, c := range cs {
		if _, ok := x.exits.get(c.GetId()); ok && c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			if onlyRunning {
				continue
			}
			c.State = runtimeapi.ContainerState_CONTAINER_EXITED
		}
		kept = append(kept, c)
	}
	return kept
}
