package pleg

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// errStreamClosed is the stream ending without an error from the runtime.
var errStreamClosed = errors.New("container event stream closed by the runtime")

// Messages from the stream goroutine to the actor. gen tells a current
// stream from one already abandoned.
type (
	streamEstablished struct{ gen int }
	streamEnded       struct {
		gen         int
		err         error
		established bool
	}
	containerEventsObserved struct {
		gen    int
		events []messages.PodLifecycleEvent
	}
	streamRetry struct{ gen int }
)

// watchEvents runs one container event stream until it ends or ctx is
// canceled. Every event refreshes its pod in the cache before it is turned
// into lifecycle events and sent.
func (p *plegActor) watchEvents(ctx context.Context, gen int) {
	ch := make(chan *runtimeapi.ContainerEventResponse, 128)
	var established atomic.Bool
	errc := make(chan error, 1)
	go func() {
		errc <- p.cfg.CRI.GetContainerEvents(ctx, ch, func(runtimeapi.RuntimeService_GetContainerEventsClient) {
			established.Store(true)
			p.send(streamEstablished{gen: gen})
		})
	}()

	// handle takes ev with every event queued behind it (up to
	// maxEventBatch): a pod with several events in the batch is inspected
	// once, and the batch's pods side by side.
	handle := func(ev *runtimeapi.ContainerEventResponse) {
		batch := []*runtimeapi.ContainerEventResponse{ev}
	drain:
		for len(batch) < maxEventBatch {
			select {
			case next := <-ch:
				batch = append(batch, next)
			default:
				break drain
			}
		}
		if events := p.handleContainerEvents(ctx, batch); len(events) > 0 {
			p.send(containerEventsObserved{gen: gen, events: events})
		}
	}
	// While the stream is up and nothing is queued, every change the
	// runtime made before now has been applied to the cache: advance the
	// cache-wide time, so pod workers waiting for status newer than their
	// last sync need not wait for the safety-net relist.
	fresh := p.cfg.Clock.NewTicker(p.cfg.RelistPeriod)
	defer fresh.Stop()
	for {
		select {
		case ev := <-ch:
			handle(ev)
		case <-fresh.C():
			if established.Load() && len(ch) == 0 {
				p.cfg.Cache.UpdateTime(p.cfg.Clock.Now())
			}
		case err := <-errc:
			for drained := false; !drained; {
				select {
				case ev := <-ch:
					handle(ev) // and what is queued behind it
				default:
					drained = true
				}
			}
			if err == nil {
				err = errStreamClosed
			}
			p.send(streamEnded{gen: gen, err: err, established: established.Load()})
			return
		}
	}
}

const (
	// maxEventBatch bounds the events one inspection pass takes off the
	// stream.
	maxEventBatch = 128
	// inspectParallel bounds the pods one pass inspects at once.
	inspectParallel = 4
)

// podEvent is one container event, read: its pod, and the lifecycle
// event it stands for (nil for one that is not inspected or reported).
type podEvent struct {
	uid             types.UID
	name, namespace string
	event           *messages.PodLifecycleEvent
	// last is the pod's newest event of the batch.
	last *runtimeapi.ContainerEventResponse
}

// handleContainerEvents refreshes the pods of a batch of events in the
// cache, each pod once, and returns the lifecycle events they stand for,
// in the order they came. A pod's read starts after its events arrived,
// so the cached status holds what each of them reports, as a read per
// event would (the kubelet's evented PLEG likewise keeps only the newest
// status of a pod).
func (p *plegActor) handleContainerEvents(ctx context.Context, batch []*runtimeapi.ContainerEventResponse) []messages.PodLifecycleEvent {
	var pods []podEvent // one per pod to inspect, in order of arrival
	index := map[types.UID]int{}
	var out []messages.PodLifecycleEvent
	for _, ev := range batch {
		pe, ok := p.readContainerEvent(ev)
		if !ok {
			continue
		}
		pe.last = ev
		if i, seen := index[pe.uid]; seen {
			pods[i].last = ev
		} else {
			index[pe.uid] = len(pods)
			pods = append(pods, pe)
		}
		if pe.event != nil {
			out = append(out, *pe.event)
		}
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, inspectParallel)
	for _, pe := range pods {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			p.inspect(ctx, pe)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return out
}

// inspect refreshes a pod in the cache: from its newest event when that
// carries the pod's status (statusFromEvent), else read from the runtime.
func (p *plegActor) inspect(ctx context.Context, pe podEvent) {
	ts := p.cfg.Clock.Now()
	if status, made, ok := p.statusFromEvent(pe); ok {
		p.cfg.Cache.SetSnapshot(pe.uid, status, made, ts)
		return
	}
	podStatus, err := p.cfg.Runtime.GetPodStatus(ctx, pe.uid, pe.name, pe.namespace)
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		klog.V(4).InfoS("Inspecting pod after container event failed", "pod", klog.KRef(pe.namespace, pe.name), "podUID", pe.uid, "err", err)
	}
	p.cfg.Cache.Set(pe.uid, podStatus, err, ts)
}

// statusFromEvent is the pod's status as its newest event of the batch
// carries it, and the time the runtime made the event (a status the cache
// already holds from later, such as a pod sync's own read, is kept:
// Cache.SetSnapshot), as the kubelet's evented PLEG does. Only an event that covers
// all the cache knows of the pod is taken: the same one sandbox at most
// and every container the cache holds but the one it reports removed, so
// a snapshot of one sandbox never hides another (a pod whose sandbox was
// made again); a sandbox's removal is read from the runtime.
func (p *plegActor) statusFromEvent(pe podEvent) (*cri.PodStatus, time.Time, bool) {
	rt, ok := p.cfg.Runtime.(EventStatuses)
	if !ok {
		return nil, time.Time{}, false
	}
	// A removal's snapshot is made after it: the removed container is
	// the one the cache may hold and the event lack. The removal of the
	// sandbox itself is read from the runtime.
	var removed string
	if pe.last.GetContainerEventType() == runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT {
		if removed = pe.last.GetContainerId(); removed == pe.last.GetPodSandboxStatus().GetId() {
			return nil, time.Time{}, false
		}
	}
	status, ok := rt.PodStatusFromEvent(pe.last)
	if !ok || status.ID != pe.uid || len(status.SandboxStatuses) != 1 {
		return nil, time.Time{}, false
	}
	cached, err := p.cfg.Cache.Get(pe.uid)
	if err != nil {
		return nil, time.Time{}, false
	}
	sandbox := status.SandboxStatuses[0].GetId()
	for _, s := range cached.SandboxStatuses {
		if s.GetId() != sandbox {
			return nil, time.Time{}, false
		}
	}
	for _, c := range cached.ContainerStatuses {
		if c.ID != removed && status.FindContainerStatusByID(c.ID) == nil {
			return nil, time.Time{}, false
		}
	}
	return status, time.Unix(0, pe.last.GetCreatedAt()), true
}

// readContainerEvent tells whose pod an event is and what it stands for;
// false for an event that is neither inspected nor reported.
func (p *plegActor) readContainerEvent(ev *runtimeapi.ContainerEventResponse) (podEvent, bool) {
	if ev == nil {
		return podEvent{}, false
	}
	sandbox := ev.GetPodSandboxStatus()
	meta := sandbox.GetMetadata()
	uid := types.UID(meta.GetUid())
	if uid == "" {
		uid = types.UID(sandbox.GetLabels()[cri.LabelPodUID])
	}
	if uid == "" {
		klog.V(4).InfoS("Ignoring container event without a pod", "containerID", ev.GetContainerId(), "type", ev.GetContainerEventType())
		return podEvent{}, false
	}
	if p.cfg.NodeName != "" && sandbox.GetLabels()[cri.LabelNode] != p.cfg.NodeName {
		return podEvent{}, false // not this node's pod (relists do not list it): not inspected, not reported
	}
	if ev.GetContainerEventType() == runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT {
		// As the kubelet's PLEGs: a creation is no lifecycle event (the
		// agent created it; its start or exit follows), and not worth a
		// pod inspection each (at a 100-pod start, 2 of every 4 events).
		return podEvent{}, false
	}
	pe := podEvent{uid: uid, name: meta.GetName(), namespace: meta.GetNamespace()}
	id := ev.GetContainerId()
	if id != "" && id == sandbox.GetId() {
		pe.event = &messages.PodLifecycleEvent{PodUID: uid, Type: messages.SandboxChanged}
		return pe, true
	}
	var t messages.PodLifecycleEventType
	switch ev.GetContainerEventType() {
	case runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT:
		t = messages.ContainerStarted
	case runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT:
		t = messages.ContainerDied
	case runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT:
		// The stop event already reported the death.
		t = messages.ContainerRemoved
	default:
		return pe, true // inspected, not reported
	}
	pe.event = &messages.PodLifecycleEvent{PodUID: uid, Type: t, ContainerID: id}
	return pe, true
}
