package supervisor

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"k8s.io/klog/v2"
)

// childFailed tells the supervisor that supervision handled a child's
// failure: it will restart after Backoff, or (GaveUp) it was stopped.
type childFailed struct {
	Child    *actor.PID
	Reason   string
	Failures int
	Backoff  time.Duration
	GaveUp   bool
}

// restartStrategy restarts a failing child after an exponential back-off,
// at most max times within window; beyond that it stops the child (the
// supervisor sees Terminated and respawns it later). Every decision is also
// sent to the supervisor as childFailed and published on the actor
// system's event stream as an actor.SupervisorEvent.
type restartStrategy struct {
	clock      Clock
	max        int
	window     time.Duration
	backoff    time.Duration
	maxBackoff time.Duration
}

var _ actor.SupervisorStrategy = &restartStrategy{}

func newRestartStrategy(cfg Config) *restartStrategy {
	return &restartStrategy{clock: cfg.Clock, max: cfg.WorkerRestarts, window: cfg.WorkerRestartWindow,
		backoff: cfg.WorkerRestartBackoff, maxBackoff: cfg.WorkerRestartMaxBackoff}
}

// HandleFailure decides restart-with-back-off or stop.
func (s *restartStrategy) HandleFailure(sys *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, rs *actor.RestartStatistics, reason, _ any) {
	rs.Fail()
	n := rs.NumberOfFailures(s.window)
	ev := &childFailed{Child: child, Reason: fmt.Sprint(reason), Failures: n}
	directive := actor.RestartDirective
	if n > s.max {
		directive = actor.StopDirective
	}
	// As protoactor's own strategies do, publish the decision: observers
	// (the agent's actorlet_actor_restarts_total) count restarts from it.
	sys.EventStream.Publish(&actor.SupervisorEvent{Child: child, Reason: reason, Directive: directive})
	if n > s.max {
		rs.Reset()
		ev.GaveUp = true
		klog.ErrorS(nil, "Actor failed too often, stopping it", "actor", child.Id, "failures", n, "window", s.window, "reason", ev.Reason)
		sup.StopChildren(child)
	} else {
		ev.Backoff = s.delay(n)
		klog.InfoS("Actor panicked, restarting after back-off", "actor", child.Id, "failures", n, "backoff", ev.Backoff, "reason", ev.Reason)
		s.clock.AfterFunc(ev.Backoff, func() { sup.RestartChildren(child) })
	}
	if self, ok := sup.(interface{ Self() *actor.PID }); ok {
		sys.Root.Send(self.Self(), ev)
	}
}

// delay is backoff × 2^(failures-1), capped.
func (s *restartStrategy) delay(failures int) time.Duration {
	d := s.backoff
	for i := 1; i < failures && d < s.maxBackoff; i++ {
		d *= 2
	}
	if d > s.maxBackoff {
		d = s.maxBackoff
	}
	return d
}
