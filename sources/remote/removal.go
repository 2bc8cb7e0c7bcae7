package remote

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/messages"
)

// RemovalCause says why the source removed a pod (sent OpRemove). Every
// removal is logged at the default level with its key and cause, and
// counted through Config.OnRemove (the agent's
// actorlet_remote_pod_removals_total{cause}).
type RemovalCause string

// The causes of a removal. Each rests on an entry the watch read, or on a
// re-watch whose read of the stream was proven complete (docs/fleet.md).
const (
	// CauseTombstone: the key's latest entry is a delete.
	CauseTombstone RemovalCause = "tombstone"
	// CausePurge: the key's latest entry is a purge.
	CausePurge RemovalCause = "purge"
	// CauseAbsent: a complete re-read of the stream, at or past the
	// revision the node applied for the key, no longer has any entry of
	// it (its tombstone was purged too, or the stream was purged).
	CauseAbsent RemovalCause = "absent"
	// CausePlacement: a fleet pod whose selector, affinity or tolerations
	// no longer fit this node.
	CausePlacement RemovalCause = "placement"
	// CauseTaint: a fleet pod evicted by a NoExecute taint of this node.
	CauseTaint RemovalCause = "taint"
	// CauseShadowed: a fleet pod stopped because a node pod took its name.
	CauseShadowed RemovalCause = "shadowed"
	// CauseReplaced: the key now holds a pod with another UID; the old pod
	// goes, the new one is added.
	CauseReplaced RemovalCause = "replaced"
)

// RemovalCauses lists every cause (for metrics that start at zero).
var RemovalCauses = []RemovalCause{CauseTombstone, CausePurge, CauseAbsent, CausePlacement, CauseTaint, CauseShadowed, CauseReplaced}

// emit sends one update of key; removals go through remove.
func (s *Source) emit(key string, u update) {
	if u.op == messages.OpRemove {
		s.remove(key, u.pod, u.cause)
		return
	}
	s.send(u.op, u.pod)
}

// remove sends the removal of key's pod, logged and counted with its cause.
func (s *Source) remove(key string, pod *v1.Pod, cause RemovalCause) {
	klog.InfoS("Removing desired pod", "node", s.cfg.NodeName, "key", key, "pod", klog.KObj(pod), "podUID", pod.UID, "cause", cause)
	s.removals[cause]++
	if s.cfg.OnRemove != nil {
		s.cfg.OnRemove(cause)
	}
	s.send(messages.OpRemove, pod)
}
