package remote

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/wire"
)

// NameConflictReason is the event reason of a fleet pod not run on a node
// because a node pod there has the same namespace/name.
const NameConflictReason = "NameConflict"

// The node/fleet name clash rule. A node key (node.<node>.<ns>.<name>) and
// a fleet key (fleet.<ns>.<name>) may both name the same pod on a node;
// the node has one pod, and one status entry, per namespace/name. The
// node pod wins, whatever the order the keys were written in (so the
// outcome is the same after an agent restart): the fleet pod is "shadowed"
// on that node, not run there (stopped if it ran), and reported once by a
// Warning NameConflict event naming both keys. It runs again as soon as
// the node key is deleted, or becomes a pod of another name.

// update is one PodUpdate the source sends.
type update struct {
	op  messages.Op
	pod *v1.Pod
	// cause says why a removal (OpRemove) happens.
	cause RemovalCause
}

// step applies one entry (transition) and the clash rule, and returns the
// updates to send, in order.
func (s *Source) step(ctx context.Context, e jetstream.KeyValueEntry) []update {
	key := e.Key()
	var out []update
	if u, ok := s.transition(ctx, e); ok {
		out = append(out, u)
	}
	dk, err := wire.ParseDesiredKey(key)
	if err != nil {
		return out
	}
	name := dk.Namespace + "/" + dk.Name
	fleetKey := wire.DesiredFleetKey(dk.Namespace, dk.Name)
	if !dk.Fleet {
		if s.delivered[key] != nil {
			s.nodeNames[name] = key
			if fp := s.delivered[fleetKey]; fp != nil {
				// The fleet pod made way: stop it before the node pod starts.
				delete(s.delivered, fleetKey)
				s.shadow(fleetKey, key, fp)
				out = append([]update{{messages.OpRemove, fp, CauseShadowed}}, out...)
			}
			return out
		}
		return append(out, s.freeName(key)...)
	}
	if nodeKey, taken := s.nodeNames[name]; taken && s.delivered[key] != nil {
		// A fleet pod arriving (or changing) while the node pod holds the
		// name: not delivered.
		fp := s.delivered[key]
		delete(s.delivered, key)
		s.shadow(key, nodeKey, fp)
		var kept []update
		for _, u := range out {
			if u.pod != fp {
				kept = append(kept, u)
			}
		}
		return kept
	}
	if s.delivered[key] == nil {
		delete(s.shadowed, key) // deleted, rejected or not for this node
	}
	return out
}

// shadow records the fleet pod at fleetKey as shadowed by nodeKey and
// reports it, once per shadowing.
func (s *Source) shadow(fleetKey, nodeKey string, pod *v1.Pod) {
	_, already := s.shadowed[fleetKey]
	s.shadowed[fleetKey] = pod
	if already {
		return
	}
	klog.InfoS("Fleet pod not run on this node: a node pod has its name", "fleetKey", fleetKey, "nodeKey", nodeKey, "pod", klog.KObj(pod))
	if s.cfg.Recorder != nil {
		s.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, NameConflictReason,
			"Fleet pod %s is not run on node %s: node pod %s has the same namespace/name and wins", fleetKey, s.cfg.NodeName, nodeKey)
	}
}

// freeName undoes the clash rule for a node key whose pod is gone: the
// fleet pod it shadowed is delivered.
func (s *Source) freeName(key string) []update {
	dk, err := wire.ParseDesiredKey(key)
	if err != nil || dk.Fleet {
		return nil
	}
	name := dk.Namespace + "/" + dk.Name
	if s.nodeNames[name] != key {
		return nil
	}
	delete(s.nodeNames, name)
	fleetKey := wire.DesiredFleetKey(dk.Namespace, dk.Name)
	fp := s.shadowed[fleetKey]
	if fp == nil {
		return nil
	}
	delete(s.shadowed, fleetKey)
	s.delivered[fleetKey] = fp
	klog.InfoS("Fleet pod no longer shadowed by a node pod", "key", fleetKey, "pod", klog.KObj(fp))
	return []update{{op: messages.OpAdd, pod: fp}}
}
