package supervisor

import (
	"sort"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/actors/actorutil"
	"github.com/actorlet/actorlet/messages"
)

// The kubelet's words for a graceful node shutdown (pkg/kubelet/nodeshutdown).
const (
	// ReasonNodeShutdown is the admission reason of a pod refused while the
	// node shuts down.
	ReasonNodeShutdown  = "NodeShutdown"
	messageNodeShutdown = "Pod was rejected as the node is shutting down."
	// ReasonShutdownTerminated and MessageShutdownTerminated are the final
	// status of a pod terminated by the shutdown.
	ReasonShutdownTerminated  = "Terminated"
	MessageShutdownTerminated = "Pod was terminated in response to imminent node shutdown."
)

// nodeShutdown is a graceful node shutdown in progress: the pods are
// terminated group by group (lowest priority first); the next group starts
// once every pod of the current one finished, or its time ran out.
type nodeShutdown struct {
	replyTo *actor.PID // answered NodeShutdownDone
	groups  []messages.ShutdownGroup
	pods    [][]*v1.Pod // the active pods of each group, taken at the start
	next    int         // the group to start next
	// waiting are the current group's pods not finished yet, by UID.
	waiting    map[types.UID]string
	terminated int
	step       int    // counts groups started, so a stale timeout is ignored
	stopTimer  func() // cancels the current group's timeout
}

// shutdownGroupTimedOut is the end of a group's grace period.
type shutdownGroupTimedOut struct{ step int }

// startNodeShutdown begins a graceful shutdown: admission refuses new
// pods, the node reports not ready, and the first group is terminated.
func (s *supervisor) startNodeShutdown(ctx actor.Context, m *messages.StartNodeShutdown) {
	if sh := s.shutdown; sh != nil {
		if sh.replyTo == nil && ctx.Sender() != nil {
			// Over already: nothing is left to terminate.
			ctx.Respond(&messages.NodeShutdownDone{})
		}
		klog.V(2).InfoS("Node shutdown already started")
		return
	}
	groups := append([]messages.ShutdownGroup(nil), m.Groups...)
	sort.SliceStable(groups, func(i, j int) bool { return groups[i].Priority < groups[j].Priority })
	active := s.activePods()
	sh := &nodeShutdown{replyTo: ctx.Sender(), groups: groups, pods: groupByPriority(groups, active),
		waiting: map[types.UID]string{}, stopTimer: func() {}}
	s.shutdown = sh
	s.node.shuttingDown = true
	klog.InfoS("Node shutting down: terminating pods by priority", "pods", len(active), "groups", len(groups))
	s.nextShutdownGroup(ctx)
}

// groupByPriority puts each pod in the group of the highest priority not
// above its own (the lowest group when below them all), as the kubelet's
// groupByPriority.
func groupByPriority(groups []messages.ShutdownGroup, pods []*v1.Pod) [][]*v1.Pod {
	out := make([][]*v1.Pod, len(groups))
	if len(groups) == 0 {
		return out
	}
	for _, p := range pods {
		prio := int32(0)
		if p.Spec.Priority != nil {
			prio = *p.Spec.Priority
		}
		i := sort.Search(len(groups), func(i int) bool { return groups[i].Priority > prio }) - 1
		if i < 0 {
			i = 0
		}
		out[i] = append(out[i], p)
	}
	return out
}

// nextShutdownGroup terminates the next group that has pods and arms its
// timeout; with none left it ends the shutdown.
func (s *supervisor) nextShutdownGroup(ctx actor.Context) {
	sh := s.shutdown
	for sh.next < len(sh.groups) {
		g, pods := sh.groups[sh.next], sh.pods[sh.next]
		sh.next++
		for _, p := range pods {
			if s.liveWorker(p.UID) == nil || s.workers[p.UID].report.Finished {
				continue
			}
			grace := g.GracePeriodSeconds
			s.terminatePod(ctx, &messages.TerminatePod{UID: p.UID, Options: shutdownKill(grace)})
			sh.waiting[p.UID] = p.Namespace + "/" + p.Name
			sh.terminated++
		}
		if len(sh.waiting) == 0 {
			continue
		}
		klog.InfoS("Node shutdown: terminating pods", "priority", g.Priority, "gracePeriod", g.GracePeriodSeconds, "pods", len(sh.waiting))
		sh.step++
		step, send := sh.step, actorutil.To(ctx)
		sh.stopTimer = actorutil.After(s.cfg.Clock, time.Duration(g.GracePeriodSeconds)*time.Second, func() {
			send(&shutdownGroupTimedOut{step: step})
		})
		return
	}
	s.endNodeShutdown(ctx, false)
}

// shutdownKill is the kill of a pod terminated by the node shutdown: at
// most grace seconds (the pod's own when shorter), and the kubelet's final
// status.
func shutdownKill(grace int64) messages.KillOptions {
	return messages.KillOptions{
		Evict: true, GracePeriodSecondsOverride: &grace,
		Reason: ReasonShutdownTerminated, Message: MessageShutdownTerminated,
		Conditions: []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue,
			Reason: v1.PodReasonTerminationByKubelet, Message: MessageShutdownTerminated}},
	}
}

// shutdownPodFinished counts a pod of the current group as gone.
func (s *supervisor) shutdownPodFinished(ctx actor.Context, uid types.UID) {
	sh := s.shutdown
	if sh == nil {
		return
	}
	if _, ok := sh.waiting[uid]; !ok {
		return
	}
	delete(sh.waiting, uid)
	if len(sh.waiting) == 0 {
		sh.stopTimer()
		s.nextShutdownGroup(ctx)
	}
}

// shutdownGroupTimeout moves on when a group's time ran out.
func (s *supervisor) shutdownGroupTimeout(ctx actor.Context, m *shutdownGroupTimedOut) {
	sh := s.shutdown
	if sh == nil || m.step != sh.step {
		return
	}
	names := sh.remaining()
	klog.InfoS("Node shutdown: group grace period over, moving on", "stillTerminating", names)
	if sh.next >= len(sh.groups) {
		s.endNodeShutdown(ctx, false)
		return
	}
	clear(sh.waiting)
	s.nextShutdownGroup(ctx)
}

func (sh *nodeShutdown) remaining() []string {
	names := make([]string, 0, len(sh.waiting))
	for _, n := range sh.waiting {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// cancelNodeShutdown ends a shutdown the system canceled: no further group
// is terminated and pods are admitted again.
func (s *supervisor) cancelNodeShutdown(ctx actor.Context) {
	s.node.shuttingDown = false
	if s.shutdown == nil {
		return
	}
	klog.InfoS("Node shutdown canceled: admitting pods again; pods already terminated stay terminated")
	s.endNodeShutdown(ctx, true)
	s.node.shuttingDown = false
}

// endNodeShutdown answers the requester. Admission keeps refusing pods
// unless the shutdown was canceled: the node is going down.
func (s *supervisor) endNodeShutdown(ctx actor.Context, canceled bool) {
	sh := s.shutdown
	sh.stopTimer()
	done := &messages.NodeShutdownDone{Terminated: sh.terminated, Remaining: sh.remaining(), Canceled: canceled}
	klog.InfoS("Node shutdown: pods terminated", "terminated", done.Terminated, "stillTerminating", done.Remaining, "canceled", canceled)
	if sh.replyTo != nil {
		ctx.Send(sh.replyTo, done)
	}
	if canceled {
		s.shutdown = nil
		return
	}
	// Keep the record (a second StartNodeShutdown is ignored) with nothing
	// left to wait for.
	sh.next, sh.waiting, sh.replyTo = len(sh.groups), map[types.UID]string{}, nil
}
