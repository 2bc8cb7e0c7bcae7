package supervisor

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/messages"
)

// actorState is where the supervisor's record of one pod actor stands in
// the actor's own lifecycle (see the diagram in doc.go). It is apart from
// the pod's work (sync → terminating → terminated), which the pod actor
// reports in PodWorkerStateChanged.
type actorState int

const (
	// actorLive: the actor runs and takes messages.
	actorLive actorState = iota
	// actorRestarting: it panicked; supervision restarts it after a
	// back-off (its mailbox is suspended meanwhile). Once restarted it asks
	// for its desired pod (GetDesiredPod) and is live again.
	actorRestarting
	// actorFailed: supervision gave up (or the actor stopped on its own);
	// housekeeping respawns it as a new actor after WorkerRespawnDelay.
	actorFailed
	// actorPurging: its work finished and housekeeping stopped it; the
	// record goes when Terminated arrives.
	actorPurging
)

func (s actorState) String() string {
	switch s {
	case actorLive:
		return "live"
	case actorRestarting:
		return "restarting"
	case actorFailed:
		return "failed"
	case actorPurging:
		return "purging"
	}
	return fmt.Sprintf("actorState(%d)", int(s))
}

// worker is the supervisor's record of one pod actor.
type worker struct {
	uid        types.UID
	pid        *actor.PID
	generation int // respawns get a new actor name, uid~generation

	actor    actorState
	failedAt time.Time // when it entered actorFailed
	restarts int       // times supervision restarted it (kept across respawns)
	lastErr  string

	// last is what rebuilds the worker after a restart or respawn; once it
	// is a kill it stays one (remember).
	last messages.SyncPod
	// report is what the pod actor last said of its work.
	report    messages.PodWorkerStateChanged
	requeueAt time.Time // zero: no resync due
}

// killed reports whether a kill was dispatched to the worker.
func (w *worker) killed() bool { return w.last.UpdateType == messages.SyncPodKill }

// takesMessages reports whether messages sent to the actor reach it now or
// once supervision restarted it.
func (w *worker) takesMessages() bool { return w.actor == actorLive || w.actor == actorRestarting }

// workDone reports whether the pod's work is over (its containers stopped).
func (w *worker) workDone() bool {
	return w.report.WorkType == messages.TerminatedWork || w.report.Finished
}

// panicked: live → restarting, or a record of supervision giving up (the
// Terminated that follows moves it to failed). A purging record stays
// purging.
func (w *worker) panicked(m *childFailed) {
	w.restarts++
	w.lastErr = fmt.Sprintf("pod worker panicked (%d failures): %s", m.Failures, m.Reason)
	switch {
	case w.actor == actorPurging:
	case m.GaveUp:
		w.actor = actorLive
	default:
		w.actor = actorRestarting
	}
}

// restarted: restarting → live (the restarted actor asked for its pod).
func (w *worker) restarted() {
	if w.actor == actorRestarting {
		w.actor = actorLive
	}
}

// stoppedUnexpectedly: live or restarting → failed.
func (w *worker) stoppedUnexpectedly(now time.Time) {
	w.actor, w.failedAt = actorFailed, now
}

// purge: → purging (housekeeping stops the actor).
func (w *worker) purge() { w.actor = actorPurging }

// liveWorker returns the worker of uid when it can take messages.
func (s *supervisor) liveWorker(uid types.UID) *worker {
	w := s.workers[uid]
	if w == nil || !w.takesMessages() {
		return nil
	}
	return w
}
