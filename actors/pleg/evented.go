package pleg

import (
	"context"
	"errors"
	"sync/atomic"

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

	handle := func(ev *runtimeapi.ContainerEventResponse) {
		if events := p.handleContainerEvent(ctx, ev); len(events) > 0 {
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
					handle(ev)
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

// handleContainerEvent refreshes the event's pod in the cache and returns
// the lifecycle events it stands for.
func (p *plegActor) handleContainerEvent(ctx context.Context, ev *runtimeapi.ContainerEventResponse) []messages.PodLifecycleEvent {
	if ev == nil {
		return nil
	}
	sandbox := ev.GetPodSandboxStatus()
	meta := sandbox.GetMetadata()
	uid := types.UID(meta.GetUid())
	if uid == "" {
		uid = types.UID(sandbox.GetLabels()[cri.LabelPodUID])
	}
	if uid == "" {
		klog.V(4).InfoS("Ignoring container event without a pod", "containerID", ev.GetContainerId(), "type", ev.GetContainerEventType())
		return nil
	}
	if p.cfg.NodeName != "" && sandbox.GetLabels()[cri.LabelNode] != p.cfg.NodeName {
		return nil // not this node's pod (relists do not list it): not inspected, not reported
	}

	if ev.GetContainerEventType() == runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT {
		// As the kubelet's PLEGs: a creation is no lifecycle event (the
		// agent created it; its start or exit follows), and not worth a
		// pod inspection each (at a 100-pod start, 2 of every 4 events).
		return nil
	}
	ts := p.cfg.Clock.Now()
	podStatus, err := p.cfg.Runtime.GetPodStatus(ctx, uid, meta.GetName(), meta.GetNamespace())
	if ctx.Err() != nil {
		return nil
	}
	if err != nil {
		klog.V(4).InfoS("Inspecting pod after container event failed", "pod", klog.KRef(meta.GetNamespace(), meta.GetName()), "podUID", uid, "err", err)
	}
	p.cfg.Cache.Set(uid, podStatus, err, ts)

	id := ev.GetContainerId()
	if id != "" && id == sandbox.GetId() {
		return []messages.PodLifecycleEvent{{PodUID: uid, Type: messages.SandboxChanged}}
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
		return nil
	}
	return []messages.PodLifecycleEvent{{PodUID: uid, Type: t, ContainerID: id}}
}
