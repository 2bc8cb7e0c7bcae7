package mux

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/messages"
)

// changes is what one source update did to the stored pods.
type changes struct {
	adds, updates, deletes, removes, reconciles []*v1.Pod
}

// applyLocked merges u into source's pods and returns what changed.
func (m *Mux) applyLocked(source string, u messages.PodUpdate) changes {
	var c changes
	stored := m.pods[source]
	switch u.Op {
	case messages.OpSet:
		// Forget what the snapshot no longer lists first, so a pod that
		// replaced another under the same name (a static pod whose file
		// changed) is not taken for a duplicate of its predecessor.
		listed := map[types.UID]bool{}
		for _, p := range u.Pods {
			if p != nil {
				listed[p.UID] = true
			}
		}
		for uid, p := range stored {
			if !listed[uid] {
				m.dropLocked(source, uid)
				c.removes = append(c.removes, p.DeepCopy())
			}
		}
		m.upsertLocked(source, u.Pods, &c)
	case messages.OpAdd, messages.OpUpdate, messages.OpDelete, messages.OpReconcile:
		m.upsertLocked(source, u.Pods, &c)
	case messages.OpRemove:
		for _, p := range u.Pods {
			if p == nil {
				continue
			}
			if existing := findLocked(stored, p); existing != nil {
				m.dropLocked(source, existing.UID)
				c.removes = append(c.removes, withShorterDeletion(existing, p))
			}
		}
	default:
		klog.ErrorS(fmt.Errorf("unknown op %d", int(u.Op)), "Dropping pod update from source", "source", source)
	}
	return c
}

// upsertLocked records each incoming pod as new, changed, status-only
// changed or unchanged.
func (m *Mux) upsertLocked(source string, pods []*v1.Pod, c *changes) {
	stored := m.pods[source]
	inBatch := map[types.UID]bool{}
	for _, in := range pods {
		if in == nil {
			continue
		}
		p := in.DeepCopy()
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		if p.Annotations[messages.ConfigSourceAnnotation] == "" {
			p.Annotations[messages.ConfigSourceAnnotation] = source
		}
		if p.UID == "" {
			m.rejectLocked(p, source, "InvalidPod", "pod has no metadata.uid")
			continue
		}
		if inBatch[p.UID] {
			m.rejectLocked(p, source, "DuplicatePod", fmt.Sprintf("UID %s appears more than once in one update from source %q", p.UID, source))
			continue
		}
		inBatch[p.UID] = true

		existing, ok := stored[p.UID]
		if !ok {
			if reason := m.duplicateLocked(source, p); reason != "" {
				m.rejectLocked(p, source, "DuplicatePod", reason)
				continue
			}
			m.storeLocked(source, p)
			c.adds = append(c.adds, p.DeepCopy())
			continue
		}
		switch {
		case differSemantically(existing, p):
			m.storeLocked(source, p)
			if p.DeletionTimestamp != nil {
				c.deletes = append(c.deletes, p.DeepCopy())
			} else {
				c.updates = append(c.updates, p.DeepCopy())
			}
		case !apiequality.Semantic.DeepEqual(existing.Status, p.Status):
			m.storeLocked(source, p)
			c.reconciles = append(c.reconciles, p.DeepCopy())
		}
	}
}

// duplicateLocked says why p, new to source, clashes with a pod already
// kept: the same UID from another source, or the same namespace/name from
// any source. Empty means no clash.
func (m *Mux) duplicateLocked(source string, p *v1.Pod) string {
	for _, other := range m.registered {
		if other != source && m.pods[other][p.UID] != nil {
			return fmt.Sprintf("UID %s is already delivered by source %q", p.UID, other)
		}
	}
	if o, ok := m.byName[p.Namespace+"/"+p.Name]; ok {
		return fmt.Sprintf("pod %s/%s is already delivered by source %q with UID %s", p.Namespace, p.Name, o.source, o.uid)
	}
	return ""
}

// owner is who holds a namespace/name: the source and the pod's UID.
type owner struct {
	source string
	uid    types.UID
}

// storeLocked keeps p for source, indexing it by namespace/name.
func (m *Mux) storeLocked(source string, p *v1.Pod) {
	if old := m.pods[source][p.UID]; old != nil {
		delete(m.byName, old.Namespace+"/"+old.Name)
	}
	m.pods[source][p.UID] = p
	m.byName[p.Namespace+"/"+p.Name] = owner{source, p.UID}
}

// dropLocked forgets source's pod uid.
func (m *Mux) dropLocked(source string, uid types.UID) {
	if old := m.pods[source][uid]; old != nil {
		key := old.Namespace + "/" + old.Name
		if o := m.byName[key]; o.source == source && o.uid == uid {
			delete(m.byName, key)
		}
		delete(m.pods[source], uid)
	}
}

func (m *Mux) rejectLocked(p *v1.Pod, source, reason, message string) {
	klog.ErrorS(fmt.Errorf("%s", message), "Rejecting pod from source", "pod", klog.KObj(p), "podUID", p.UID, "source", source, "reason", reason)
	if m.recorder != nil {
		m.recorder.Eventf(p, v1.EventTypeWarning, reason, "Rejected pod from source %q: %s", source, message)
	}
}

// findLocked looks p up by UID, or by namespace/name when it has no UID.
func findLocked(stored map[types.UID]*v1.Pod, p *v1.Pod) *v1.Pod {
	if p.UID != "" {
		return stored[p.UID]
	}
	for _, q := range stored {
		if q.Namespace == p.Namespace && q.Name == p.Name {
			return q
		}
	}
	return nil
}

// differSemantically says whether the parts of a pod that drive the sync
// loop changed: spec, labels, annotations, deletion timestamp and grace.
// Status alone is a reconcile, not an update.
func differSemantically(a, b *v1.Pod) bool {
	return !apiequality.Semantic.DeepEqual(a.Spec, b.Spec) ||
		!apiequality.Semantic.DeepEqual(a.Labels, b.Labels) ||
		!apiequality.Semantic.DeepEqual(a.Annotations, b.Annotations) ||
		!apiequality.Semantic.DeepEqual(a.DeletionTimestamp, b.DeletionTimestamp) ||
		!apiequality.Semantic.DeepEqual(a.DeletionGracePeriodSeconds, b.DeletionGracePeriodSeconds)
}

// withShorterDeletion is a copy of the stored pod, with the deletion of the
// removal's pod if that is shorter (a deleted key is a deletion with grace
// 0): a grace period only shortens.
func withShorterDeletion(stored, removed *v1.Pod) *v1.Pod {
	p := stored.DeepCopy()
	if g := removed.DeletionGracePeriodSeconds; g != nil && (p.DeletionGracePeriodSeconds == nil || *g < *p.DeletionGracePeriodSeconds) {
		if p.DeletionTimestamp == nil {
			p.DeletionTimestamp = removed.DeletionTimestamp.DeepCopy()
		}
		g := *g
		p.DeletionGracePeriodSeconds = &g
	}
	return p
}
