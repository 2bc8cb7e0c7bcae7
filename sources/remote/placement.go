package remote

import (
	"context"
	"fmt"
	"github.com/actorlet/actorlet/messages/wire"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/actorlet/actorlet/messages"
)

// Which fleet pods a node runs, as the scheduler and the taint manager
// would decide for it:
//
//   - a fleet pod starts here when spec.nodeSelector and
//     spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution
//     match the node's labels, and every NoSchedule and NoExecute taint of
//     the node is tolerated (PreferNoSchedule is a preference: ignored);
//   - "IgnoredDuringExecution": a label change never stops a running pod,
//     nor does a new NoSchedule taint;
//   - a NoExecute taint the pod does not tolerate evicts it at once; one it
//     tolerates with tolerationSeconds evicts it when that time is up;
//   - when labels or taints change, fleet pods waiting here are looked at
//     again and start if they now fit.
//
// Pods written for this node by name (node.<node>.… keys) are placed by
// the operator and are not filtered.

// nodeView is the node as placement sees it.
type nodeView struct {
	node *v1.Node // name, labels, taints
}

func newNodeView(name string, labels map[string]string, taints []v1.Taint) nodeView {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	for k, v := range labels {
		n.Labels[k] = v
	}
	n.Spec.Taints = append([]v1.Taint(nil), taints...)
	return nodeView{node: n}
}

// fits reports whether a fleet pod may start on the node, and why not.
func (n nodeView) fits(pod *v1.Pod) (bool, string) {
	ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(n.node)
	switch {
	case err != nil:
		return false, fmt.Sprintf("node affinity is invalid: %v", err)
	case !ok:
		return false, "node selector or required node affinity does not match the node's labels"
	}
	if t, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), n.node.Spec.Taints, pod.Spec.Tolerations, func(t *v1.Taint) bool {
		return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
	}, true); untolerated {
		return false, fmt.Sprintf("the node has taint %s that the pod does not tolerate", t.ToString())
	}
	return true, ""
}

// evictAfter is when a running pod must leave because of the node's
// NoExecute taints: ok false when none applies; after 0 for an untolerated
// taint, else the shortest tolerationSeconds of the matching tolerations.
func (n nodeView) evictAfter(pod *v1.Pod) (time.Duration, bool) {
	var after time.Duration = -1
	for i := range n.node.Spec.Taints {
		t := &n.node.Spec.Taints[i]
		if t.Effect != v1.TaintEffectNoExecute {
			continue
		}
		tolerated, limit := false, time.Duration(-1)
		for j := range pod.Spec.Tolerations {
			tol := &pod.Spec.Tolerations[j]
			if !tol.ToleratesTaint(klog.Background(), t, true) {
				continue
			}
			tolerated = true
			if tol.TolerationSeconds == nil {
				limit = -1
				break // tolerated forever
			}
			d := time.Duration(max(*tol.TolerationSeconds, 0)) * time.Second
			if limit < 0 || d < limit {
				limit = d
			}
		}
		switch {
		case !tolerated:
			return 0, true
		case limit >= 0 && (after < 0 || limit < after):
			after = limit
		}
	}
	return after, after >= 0
}

// nodeState is the node's labels and taints as set at run time; the run
// goroutine reads it when told it changed.
type nodeState struct {
	mu      sync.Mutex
	view    nodeView
	changed chan struct{} // 1-buffered: a change is pending
}

// SetNode replaces the node's labels and taints: fleet pods are looked at
// again (new ones that now fit start, NoExecute taints evict).
func (s *Source) SetNode(labels map[string]string, taints []v1.Taint) {
	s.node.mu.Lock()
	s.node.view = newNodeView(s.cfg.NodeName, labels, taints)
	s.node.mu.Unlock()
	select {
	case s.node.changed <- struct{}{}:
	default:
	}
}

func (s *Source) currentNode() nodeView {
	s.node.mu.Lock()
	defer s.node.mu.Unlock()
	return s.node.view
}

// reevaluate applies the node's current labels and taints to fleet pods.
// It runs on the watch goroutine.
func (s *Source) reevaluate(ctx context.Context) {
	n := s.currentNode()
	now := s.cfg.Clock.Now()
	for key, e := range s.waiting {
		pod, v, _ := s.admit(mustKey(key), key, e.Value())
		if v != accepted {
			continue
		}
		delete(s.waiting, key)
		s.delivered[key] = pod
		klog.V(2).InfoS("Fleet pod now fits this node", "pod", klog.KObj(pod))
		s.send(messages.OpAdd, pod)
	}
	next := time.Duration(-1)
	for key, pod := range s.delivered {
		if !isFleetKey(key) {
			continue
		}
		after, evict := n.evictAfter(pod)
		if !evict {
			delete(s.evictAt, key)
			continue
		}
		at, armed := s.evictAt[key]
		if !armed {
			at = now.Add(after)
			s.evictAt[key] = at
		}
		if left := at.Sub(now); left > 0 {
			if next < 0 || left < next {
				next = left
			}
			continue
		}
		delete(s.evictAt, key)
		delete(s.delivered, key)
		if e, ok := s.entries[key]; ok {
			s.waiting[key] = e // back if the taint goes away
		}
		klog.InfoS("Evicting fleet pod: the node has a NoExecute taint it does not tolerate (any longer)", "pod", klog.KObj(pod))
		if s.cfg.Recorder != nil {
			s.cfg.Recorder.Eventf(pod, v1.EventTypeNormal, "TaintManagerEviction", "Marking for deletion Pod %s/%s", pod.Namespace, pod.Name)
		}
		s.remove(key, pod, CauseTaint)
	}
	if s.evictTimer != nil {
		s.evictTimer()
		s.evictTimer = nil
	}
	if next >= 0 {
		s.evictTimer = afterFunc(s.cfg.Clock, next, func() {
			select {
			case s.node.changed <- struct{}{}:
			default:
			}
		})
	}
}

// afterFunc runs f after d on clk and returns a stop function.
func afterFunc(clk clock.Clock, d time.Duration, f func()) func() {
	t := clk.NewTimer(d)
	stop := make(chan struct{})
	go func() {
		defer t.Stop()
		select {
		case <-t.C():
			f()
		case <-stop:
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(stop) }) }
}

func isFleetKey(key string) bool {
	k, err := wire.ParseDesiredKey(key)
	return err == nil && k.Fleet
}

func mustKey(key string) wire.DesiredKey {
	k, _ := wire.ParseDesiredKey(key)
	return k
}

// remember keeps the latest entry of a fleet key, and whether it waits
// for the node to fit.
func (s *Source) remember(e jetstream.KeyValueEntry, waiting bool) {
	if !isFleetKey(e.Key()) {
		return
	}
	s.entries[e.Key()] = e
	if waiting {
		s.waiting[e.Key()] = e
	} else {
		delete(s.waiting, e.Key())
	}
}

// forget drops a fleet key's entries (deleted from the bucket).
func (s *Source) forget(key string) {
	delete(s.entries, key)
	delete(s.waiting, key)
	delete(s.evictAt, key)
}
