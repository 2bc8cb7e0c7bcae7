package supervisor

import (
	"reflect"
	"sort"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/messages"
)

// podUpdate applies a change of desired pods.
func (s *supervisor) podUpdate(ctx actor.Context, u *messages.PodUpdate) {
	klog.V(2).InfoS("Pod update", "op", u.Op, "source", u.Source, "pods", len(u.Pods))
	switch u.Op {
	case messages.OpAdd:
		s.addPods(ctx, u.Source, u.Pods)
	case messages.OpUpdate, messages.OpDelete:
		for _, p := range u.Pods {
			s.updatePod(ctx, u.Source, p)
		}
	case messages.OpRemove:
		for _, p := range u.Pods {
			s.removePod(ctx, p.UID, p)
		}
	case messages.OpReconcile:
		for _, p := range u.Pods {
			s.reconcilePod(p)
		}
	case messages.OpSet:
		s.setPods(ctx, u.Source, u.Pods)
	default:
		klog.ErrorS(nil, "Ignoring pod update with unknown op", "op", u.Op)
	}
}

// addPods admits new pods in creation order and creates their workers.
func (s *supervisor) addPods(ctx actor.Context, source string, pods []*v1.Pod) {
	pods = append([]*v1.Pod(nil), pods...)
	sort.SliceStable(pods, func(i, j int) bool {
		return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp)
	})
	for _, p := range pods {
		if d := s.pods[p.UID]; d != nil {
			if d.done || d.rejected {
				d.pod = p // a finished or rejected UID is not run again
				continue
			}
			s.updatePod(ctx, source, p) // already known: an update
			continue
		}
		if w := s.workers[p.UID]; w != nil || s.cleaning[p.UID] {
			// The UID came back while its worker is stopping (the worker
			// records restartRequested) or its cleanup runs: it starts once
			// the worker is purged and the cleanup is over.
			s.pods[p.UID] = &desiredPod{pod: p, source: source, readded: true}
			if w != nil {
				s.dispatch(ctx, p.UID, messages.SyncPod{UpdateType: messages.SyncPodCreate, Pod: p, StartTime: s.cfg.Clock.Now()})
			}
			continue
		}
		d := &desiredPod{pod: p, source: source}
		if r := admit(s.node, p, s.currentUsage()); r != nil {
			d.rejected, d.why = true, r
			s.pods[p.UID] = d
			klog.InfoS("Pod rejected at admission", "pod", klog.KObj(p), "podUID", p.UID, "reason", r.Reason, "message", r.Message)
			if s.cfg.Recorder != nil {
				s.cfg.Recorder.Eventf(p, v1.EventTypeWarning, r.Reason, "%s", r.Message)
			}
			s.tell(ctx, &messages.PodRejected{Pod: p, Reason: r.Reason, Message: r.Message}, s.status)
			continue
		}
		s.pods[p.UID] = d
		s.usage.add(p)
		s.dispatch(ctx, p.UID, messages.SyncPod{UpdateType: messages.SyncPodCreate, Pod: p, StartTime: s.cfg.Clock.Now()})
	}
}

// updatePod records a changed pod and dispatches an update; a deletion
// timestamp makes the worker terminate gracefully.
func (s *supervisor) updatePod(ctx actor.Context, source string, p *v1.Pod) {
	d := s.pods[p.UID]
	if d == nil {
		s.addPods(ctx, source, []*v1.Pod{p})
		return
	}
	d.pod = p
	s.usage = nil // its requests may have changed
	if d.rejected && d.why != nil && p.DeletionTimestamp != nil {
		// Nothing runs: its Failed status, published again with the
		// deletion, lets it be finalized at once (the kubelet's status
		// manager deletes a terminal pod without waiting for its grace).
		s.tell(ctx, &messages.PodRejected{Pod: p, Reason: d.why.Reason, Message: d.why.Message}, s.status)
	}
	if d.rejected || d.done || s.static.isWaiting(p.UID) {
		return
	}
	s.dispatch(ctx, p.UID, messages.SyncPod{UpdateType: messages.SyncPodUpdate, Pod: p, StartTime: s.cfg.Clock.Now()})
}

// removePod forgets a pod its source no longer has and kills its worker.
// removed, the pod as the removal carries it (nil for one missing from a
// snapshot), may shorten the deletion grace period (a deleted desired key
// is a deletion with grace 0); it never lengthens it.
func (s *supervisor) removePod(ctx actor.Context, uid types.UID, removed *v1.Pod) {
	d := s.pods[uid]
	delete(s.pods, uid)
	s.usage = nil
	s.static.forget(uid)
	s.tell(ctx, &messages.PodForgotten{UID: uid}, s.prober)
	if s.workers[uid] == nil {
		// Nothing runs (rejected, waiting or already purged): drop its status
		// now; a worker's status is dropped when housekeeping purges it.
		s.tell(ctx, &messages.PodForgotten{UID: uid}, s.status)
	}
	if d == nil {
		return
	}
	pod := d.pod
	if removed == nil {
		removed = &v1.Pod{}
	}
	if g := removed.DeletionGracePeriodSeconds; g != nil && (pod.DeletionGracePeriodSeconds == nil || *g < *pod.DeletionGracePeriodSeconds) {
		cp := *pod
		cp.DeletionGracePeriodSeconds = g
		if cp.DeletionTimestamp == nil {
			cp.DeletionTimestamp = removed.DeletionTimestamp
		}
		pod = &cp
	}
	if w := s.workers[uid]; w != nil && w.actor == actorLive {
		// A worker that finished before the removal (a completed pod, one
		// killed or evicted) has nothing left to kill: it is purged and the
		// pod cleaned up now, not at the next housekeeping tick (the kill
		// below is then only remembered).
		s.purgeFinished(ctx, w)
	}
	s.dispatch(ctx, uid, messages.SyncPod{UpdateType: messages.SyncPodKill, Pod: pod, StartTime: s.cfg.Clock.Now()})
}

// reconcilePod records a status-only change: nothing is restarted.
func (s *supervisor) reconcilePod(p *v1.Pod) {
	if d := s.pods[p.UID]; d != nil {
		cp := *d.pod
		cp.Status = p.Status
		d.pod = &cp
	}
}

// setPods turns a full snapshot of a source into adds, updates, reconciles
// and removes.
func (s *supervisor) setPods(ctx actor.Context, source string, pods []*v1.Pod) {
	seen := map[types.UID]bool{}
	var added []*v1.Pod
	for _, p := range pods {
		seen[p.UID] = true
		d := s.pods[p.UID]
		switch {
		case d == nil:
			added = append(added, p)
		case sameSpec(d.pod, p):
			if !reflect.DeepEqual(d.pod.Status, p.Status) {
				s.reconcilePod(p)
			}
		default:
			s.updatePod(ctx, source, p)
		}
	}
	s.addPods(ctx, source, added)
	for uid, d := range s.pods {
		if d.source == source && !seen[uid] {
			s.removePod(ctx, uid, nil)
		}
	}
}

// sameSpec reports whether two versions of a pod differ only in status.
func sameSpec(a, b *v1.Pod) bool {
	return reflect.DeepEqual(a.Spec, b.Spec) && reflect.DeepEqual(a.Labels, b.Labels) &&
		reflect.DeepEqual(a.Annotations, b.Annotations) && reflect.DeepEqual(a.DeletionTimestamp, b.DeletionTimestamp) &&
		reflect.DeepEqual(a.DeletionGracePeriodSeconds, b.DeletionGracePeriodSeconds)
}
