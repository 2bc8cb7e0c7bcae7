package messages

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/cri/container"
)

// UpdateType says why a pod actor is asked to sync (kubelet's
// SyncPodType).
type UpdateType int

const (
	SyncPodSync   UpdateType = iota // periodic or event-driven resync
	SyncPodUpdate                   // the spec changed
	SyncPodCreate                   // first sight of the pod
	SyncPodKill                     // terminate the pod
)

func (t UpdateType) String() string {
	switch t {
	case SyncPodSync:
		return "sync"
	case SyncPodUpdate:
		return "update"
	case SyncPodCreate:
		return "create"
	case SyncPodKill:
		return "kill"
	}
	return fmt.Sprintf("UpdateType(%d)", int(t))
}

// KillOptions shape a kill: carried by SyncPod (kind Kill) and by an
// operator's TerminatePod.
type KillOptions struct {
	// Evict marks the pod as evicted: it ends Failed with Reason/Message.
	Evict bool
	// GracePeriodSecondsOverride shortens the grace period; it can never
	// lengthen it.
	GracePeriodSecondsOverride *int64
	Reason                     string
	Message                    string
	// Conditions are set on an evicted pod's final status (the kubelet's
	// DisruptionTarget), replacing any of the same type.
	Conditions []v1.PodCondition
}

// SyncPod asks a pod actor to bring its pod towards the desired state
// (the kubelet's UpdatePodOptions). Exactly one of Pod or RunningPod is set:
// RunningPod alone means an orphan the runtime has but no source wants.
type SyncPod struct {
	UpdateType  UpdateType
	Pod         *v1.Pod
	RunningPod  *container.Pod
	KillOptions *KillOptions
	// StartTime is when the update was first seen, for latency metrics; when
	// updates coalesce the earliest is kept.
	StartTime time.Time
}

func (s SyncPod) String() string {
	uid, name := types.UID(""), ""
	switch {
	case s.Pod != nil:
		uid, name = s.Pod.UID, s.Pod.Namespace+"/"+s.Pod.Name
	case s.RunningPod != nil:
		uid, name = s.RunningPod.ID, s.RunningPod.Namespace+"/"+s.RunningPod.Name
	}
	return fmt.Sprintf("SyncPod{%s %s %s}", s.UpdateType, name, uid)
}

// TerminatePod is an operator's kill or evict of one pod.
type TerminatePod struct {
	UID     types.UID
	Options KillOptions
}

// RestartPod is an operator's restart of a pod's containers, or of one
// container when Container is set. Restarted containers count as restarts.
type RestartPod struct {
	UID       types.UID
	Container string
}
