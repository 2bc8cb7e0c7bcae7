package pleg

import (
	"context"
	"fmt"
	"time"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// relistState is what a relist carries over to the next one. The actor owns
// it and hands it to the relist goroutine, which returns the successor; the
// two never touch it at the same time.
type relistState struct {
	// pods is each pod as last reported: the baseline of the next diff. A
	// pod whose inspection failed keeps its older record so that its events
	// are generated again.
	pods map[types.UID]*cri.Pod
	// reinspect holds pods whose status could not be fetched; they are
	// inspected again on the next relist even without new events.
	reinspect map[types.UID]*cri.Pod
}

func newRelistState() relistState {
	return relistState{
		pods:      make(map[types.UID]*cri.Pod),
		reinspect: make(map[types.UID]*cri.Pod),
	}
}

// relistDone is a finished relist, sent from its goroutine to the actor.
type relistDone struct {
	state    relistState
	events   []messages.PodLifecycleEvent
	start    time.Time
	duration time.Duration
	err      error
}

// relister runs one relist against the runtime and the cache.
type relister struct {
	runtime Runtime
	cache   *Cache
	clock   clock.PassiveClock
}

// relist lists every pod, diffs it against prev, refreshes the cache for
// every pod with events (and those awaiting reinspection) and finally marks
// the whole cache fresh as of the relist's start. The events it returns are
// only those whose pod's status is already in the cache.
func (r relister) relist(ctx context.Context, prev relistState) relistDone {
	start := r.clock.Now()
	done := func(d relistDone) relistDone {
		d.start, d.duration = start, r.clock.Since(start)
		return d
	}

	pods, err := r.runtime.GetPods(ctx, true)
	if err != nil {
		return done(relistDone{state: prev, err: fmt.Errorf("list runtime pods: %w", err)})
	}
	cur := indexPods(pods)
	next := newRelistState()
	var events []messages.PodLifecycleEvent
	inspected := make(map[types.UID]bool)

	for _, uid := range sortedUIDs(prev.pods, cur) {
		old, pod := prev.pods[uid], cur[uid]
		podEvs := podEvents(uid, old, pod)
		switch {
		case len(podEvs) == 0:
			if pod != nil {
				next.pods[uid] = pod
			}
		case pod == nil:
			// The pod vanished from the runtime: nothing is left to inspect.
			r.cache.Delete(uid)
			events = append(events, podEvs...)
		default:
			inspected[uid] = true
			if err := r.inspect(ctx, pod); err != nil {
				klog.V(4).InfoS("Ignoring PLEG events until the pod can be inspected", "pod", klog.KRef(pod.Namespace, pod.Name), "podUID", uid, "err", err)
				if old != nil {
					next.pods[uid] = old
				}
				next.reinspect[uid] = pod
				continue
			}
			next.pods[uid] = pod
			events = append(events, podEvs...)
		}
	}

	for uid := range prev.reinspect {
		pod := cur[uid]
		if pod == nil || inspected[uid] {
			continue
		}
		if err := r.inspect(ctx, pod); err != nil {
			next.reinspect[uid] = pod
		}
	}

	if ctx.Err() != nil {
		return done(relistDone{state: prev, err: fmt.Errorf("relist: %w", ctx.Err())})
	}
	r.cache.UpdateTime(start)
	return done(relistDone{state: next, events: events})
}

// inspect fetches one pod's status into the cache, recording the error when
// it fails so that a waiting pod actor learns of it.
func (r relister) inspect(ctx context.Context, pod *cri.Pod) error {
	ts := r.clock.Now()
	status, err := r.runtime.GetPodStatus(ctx, pod.ID, pod.Name, pod.Namespace)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		err = fmt.Errorf("get status of pod %s/%s (%s): %w", pod.Namespace, pod.Name, pod.ID, err)
	}
	r.cache.Set(pod.ID, status, err, ts)
	return err
}
