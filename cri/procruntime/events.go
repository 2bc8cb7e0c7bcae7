package procruntime

import (
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// eventBuffer is how many events a subscriber may fall behind before it is
// cut off (its stream ends with ResourceExhausted, and a client re-lists).
const eventBuffer = 1024

// broadcaster fans container events out to every GetContainerEvents
// stream. Publishing never blocks the runtime.
type broadcaster struct {
	mu     sync.Mutex
	subs   map[int]*subscriber
	next   int
	closed bool
}

type subscriber struct {
	ch     chan *runtimeapi.ContainerEventResponse
	lagged bool
}

func newBroadcaster() *broadcaster {
	return &broadcaster{subs: map[int]*subscriber{}}
}

// subscribe returns a new subscription and its cancel func, or nil if the
// broadcaster is closed.
func (b *broadcaster) subscribe() (*subscriber, func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, func() {}
	}
	id := b.next
	b.next++
	s := &subscriber{ch: make(chan *runtimeapi.ContainerEventResponse, eventBuffer)}
	b.subs[id] = s
	return s, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.subs[id]; ok {
			delete(b.subs, id)
			close(s.ch)
		}
	}
}

func (b *broadcaster) publish(ev *runtimeapi.ContainerEventResponse) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, s := range b.subs {
		select {
		case s.ch <- ev:
		default:
			s.lagged = true
			delete(b.subs, id)
			close(s.ch)
		}
	}
}

func (b *broadcaster) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for id, s := range b.subs {
		delete(b.subs, id)
		close(s.ch)
	}
}

// GetContainerEvents streams container and sandbox events (CREATED,
// STARTED, STOPPED, DELETED, each with the sandbox's status and its
// containers' statuses) until the client goes away or the runtime stops.
func (r *Runtime) GetContainerEvents(_ *runtimeapi.GetEventsRequest, stream grpc.ServerStreamingServer[runtimeapi.ContainerEventResponse]) error {
	sub, cancel := r.events.subscribe()
	defer cancel()
	if sub == nil {
		return status.Error(codes.Unavailable, "runtime is stopping")
	}
	for {
		select {
		case <-stream.Context().Done():
			return nil
		case ev, ok := <-sub.ch:
			if !ok {
				if sub.lagged {
					return status.Error(codes.ResourceExhausted, "event subscriber fell too far behind; re-list and subscribe again")
				}
				return status.Error(codes.Unavailable, "runtime is stopping")
			}
			if err := stream.Send(ev); err != nil {
				return err
			}
		}
	}
}

func (r *Runtime) publishContainerLocked(c *container, t runtimeapi.ContainerEventType) {
	ev := &runtimeapi.ContainerEventResponse{
		ContainerId:        c.rec.ID,
		ContainerEventType: t,
		CreatedAt:          time.Now().UnixNano(),
		ContainersStatuses: r.containerStatusesLocked(c.rec.SandboxID),
	}
	if s, ok := r.sandboxes[c.rec.SandboxID]; ok {
		ev.PodSandboxStatus = r.sandboxStatusLocked(s)
	}
	r.events.publish(ev)
}

func (r *Runtime) publishSandboxLocked(s *sandbox, t runtimeapi.ContainerEventType) {
	r.events.publish(&runtimeapi.ContainerEventResponse{
		ContainerId:        s.rec.ID,
		ContainerEventType: t,
		CreatedAt:          time.Now().UnixNano(),
		PodSandboxStatus:   r.sandboxStatusLocked(s),
		ContainersStatuses: r.containerStatusesLocked(s.rec.ID),
	})
}
