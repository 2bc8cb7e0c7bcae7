package podactor

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/podrules"
)

// orphanGracePeriod is the grace period of a pod only the runtime knows.
const orphanGracePeriod int64 = 1

// minGracePeriod is the shortest grace period a kill uses.
const minGracePeriod int64 = 1

// coalesce merges next into the pending update: the latest update wins, the
// earliest start time is kept, and a pending kill is never replaced by a
// non-kill (next's pod is still taken, so the kill uses the newest spec).
func coalesce(pending, next *messages.SyncPod) *messages.SyncPod {
	merged := *next
	if pending == nil {
		return &merged
	}
	if !pending.StartTime.IsZero() && (merged.StartTime.IsZero() || pending.StartTime.Before(merged.StartTime)) {
		merged.StartTime = pending.StartTime
	}
	if pending.UpdateType == messages.SyncPodKill && next.UpdateType != messages.SyncPodKill {
		merged.UpdateType = messages.SyncPodKill
		merged.KillOptions = pending.KillOptions
	}
	if merged.Pod == nil && merged.RunningPod == nil {
		merged.Pod, merged.RunningPod = pending.Pod, pending.RunningPod
	}
	return &merged
}

// gracePeriod is the effective grace period of a kill: the shortest of the
// spec's, the deletion's and the override, at least minGracePeriod. An
// orphan (pod nil) uses orphanGracePeriod unless overridden.
func gracePeriod(pod *v1.Pod, opts *messages.KillOptions) int64 {
	g := podrules.DefaultGracePeriodSeconds
	if pod == nil {
		g = orphanGracePeriod
	} else {
		if pod.Spec.TerminationGracePeriodSeconds != nil {
			g = *pod.Spec.TerminationGracePeriodSeconds
		}
		if d := pod.DeletionGracePeriodSeconds; d != nil && *d < g {
			g = *d
		}
	}
	if opts != nil && opts.GracePeriodSecondsOverride != nil {
		if o := *opts.GracePeriodSecondsOverride; pod == nil || o < g {
			g = o
		}
	}
	if g < minGracePeriod {
		g = minGracePeriod
	}
	return g
}

// shortest returns the shorter of the current grace period (nil: none yet)
// and g.
func shortest(current *int64, g int64) int64 {
	if current != nil && *current < g {
		return *current
	}
	return g
}

// requestsTermination reports whether an update, seen while syncing, makes
// the pod terminate: an explicit kill, a deletion timestamp, an orphan, or
// a terminal phase in the pod's status (the last status published, which a
// source gives a pod terminal before this worker: as the kubelet's pod
// workers, a pod whose status is terminal is torn down, never run).
func requestsTermination(u *messages.SyncPod) bool {
	return u.UpdateType == messages.SyncPodKill || u.Pod == nil || u.Pod.DeletionTimestamp != nil ||
		podrules.IsTerminal(u.Pod.Status.Phase)
}

// nothingRunning reports a runtime status with no running container and no
// ready sandbox.
func nothingRunning(s *cri.PodStatus) bool {
	if len(s.RunningContainers()) > 0 {
		return false
	}
	for _, sb := range s.SandboxStatuses {
		if sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			return false
		}
	}
	return true
}

// runningPod converts a runtime status into the runtime pod KillPod stops.
func runningPod(s *cri.PodStatus) *cri.Pod {
	p := &cri.Pod{ID: s.ID, Name: s.Name, Namespace: s.Namespace}
	for _, c := range s.ContainerStatuses {
		p.Containers = append(p.Containers, &cri.Container{
			ID: c.ID, Name: c.Name, Image: c.Image, ImageID: c.ImageID, Hash: c.Hash,
			State: c.State, CreatedAt: c.CreatedAt.UnixNano(),
		})
	}
	for _, sb := range s.SandboxStatuses {
		state := cri.ContainerStateExited
		if sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			state = cri.ContainerStateRunning
		}
		p.Sandboxes = append(p.Sandboxes, &cri.Container{ID: sb.GetId(), State: state, CreatedAt: sb.GetCreatedAt()})
	}
	return p
}

// requeueAfter is when a pod wants its next sync: at once after its phase
// changed, after the jittered back-off period after an error, else after the
// jittered resync interval. Jitter is ×[1, 1.5).
func requeueAfter(phaseChanged bool, err error, resync, backOff time.Duration) time.Duration {
	switch {
	case phaseChanged:
		return 0
	case err != nil:
		return wait.Jitter(backOff, 0.5)
	}
	return wait.Jitter(resync, 0.5)
}

// terminalStatus turns the status generated for a stopped pod into its final
// status: a phase already terminal stays (phases never go back), any other
// becomes Failed, and an eviction ends Failed with the kill's reason and
// message (and its conditions).
func terminalStatus(s v1.PodStatus, lastPhase v1.PodPhase, kill *messages.KillOptions) v1.PodStatus {
	switch {
	case podrules.IsTerminal(lastPhase):
		s.Phase = lastPhase
	case !podrules.IsTerminal(s.Phase):
		s.Phase = v1.PodFailed
	}
	if kill != nil && kill.Evict {
		s.Phase = v1.PodFailed
		s.Reason = kill.Reason
		s.Message = kill.Message
		for _, c := range kill.Conditions {
			s.Conditions = setCondition(s.Conditions, c)
		}
	}
	return s
}

// setCondition replaces the condition of c's type in conds, or appends c.
func setCondition(conds []v1.PodCondition, c v1.PodCondition) []v1.PodCondition {
	out := make([]v1.PodCondition, 0, len(conds)+1)
	for _, old := range conds {
		if old.Type != c.Type {
			out = append(out, old)
		}
	}
	return append(out, c)
}
