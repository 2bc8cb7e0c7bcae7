package supervisor

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/messages"
)

// describeTimeout bounds the wait for a pod actor's own description.
const describeTimeout = time.Second

// describe forwards to a live worker (keeping the sender) or answers from
// the supervisor's record.
func (s *supervisor) describe(ctx actor.Context, m *messages.DescribePodWorker) {
	w := s.workers[m.UID]
	if w == nil {
		ctx.Respond(&messages.PodWorkerDescription{UID: m.UID})
		return
	}
	if w.actor == actorLive {
		// Ask the pod actor, but never let an operator wait on an actor
		// that cannot answer (its mailbox is suspended while supervision
		// restarts it): after a short wait the loop answers from its own
		// record. The loop itself does not block meanwhile.
		sender, uid := ctx.Sender(), m.UID
		f := ctx.RequestFuture(w.pid, m, describeTimeout)
		ctx.ReenterAfter(f, func(res interface{}, err error) {
			if err != nil {
				d := s.describeFromRecord(uid)
				d.LastSyncError = fmt.Sprintf("pod worker did not answer (%v); last recorded error: %s", err, d.LastSyncError)
				res = d
			}
			if sender != nil {
				ctx.Send(sender, res)
			}
		})
		return
	}
	ctx.Respond(s.describeFromRecord(m.UID))
}

// describeFromRecord describes a worker from what the loop knows of it.
func (s *supervisor) describeFromRecord(uid types.UID) *messages.PodWorkerDescription {
	w := s.workers[uid]
	if w == nil {
		return &messages.PodWorkerDescription{UID: uid}
	}
	d := &messages.PodWorkerDescription{Found: true, UID: uid, FullName: w.report.FullName, WorkType: w.report.WorkType,
		RestartRequested: w.report.RestartRequested, LastSyncError: w.lastErr, ActorRestarts: w.restarts}
	switch w.actor {
	case actorRestarting:
		d.LastSyncError = fmt.Sprintf("pod worker restarting after a panic: %s", w.lastErr)
	case actorFailed:
		d.LastSyncError = fmt.Sprintf("pod worker failed and is stopped (%s); respawning", w.lastErr)
		d.NextSyncTime = w.failedAt.Add(s.cfg.WorkerRespawnDelay)
	}
	return d
}
