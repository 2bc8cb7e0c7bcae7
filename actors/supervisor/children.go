package supervisor

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/actors/podactor"
	"github.com/actorlet/actorlet/messages"
)

// Names of the supervisor's fixed children: each is spawned under this name
// and respawned under it, so its PID (see Handles) stays valid.
const (
	ChildPLEG   = "pleg"
	ChildProber = "prober"
	ChildStatus = "status"
	// ChildEviction is the eviction manager (actors/eviction), the
	// housekeeping child that watches the node's pressure.
	ChildEviction = "eviction"
)

// coreChild is one fixed child: its name, its props in Children, and where
// the supervisor keeps its PID.
type coreChild struct {
	name  string
	props func(Children) func() (*actor.Props, error)
	pid   func(*supervisor) **actor.PID
}

// coreChildren is every fixed child, in spawn order.
var coreChildren = []coreChild{
	{ChildPLEG, func(c Children) func() (*actor.Props, error) { return c.PLEG }, func(s *supervisor) **actor.PID { return &s.pleg }},
	{ChildProber, func(c Children) func() (*actor.Props, error) { return c.Prober }, func(s *supervisor) **actor.PID { return &s.prober }},
	{ChildStatus, func(c Children) func() (*actor.Props, error) { return c.Status }, func(s *supervisor) **actor.PID { return &s.status }},
	{ChildEviction, func(c Children) func() (*actor.Props, error) { return c.Eviction }, func(s *supervisor) **actor.PID { return &s.eviction }},
}

// Handles are the PIDs the agent and operators address: the sync loop and
// its fixed children.
type Handles struct {
	Supervisor, PLEG, Prober, Status *actor.PID
}

// Spawn starts the sync loop under root as "supervisor" and gives its
// handles.
func Spawn(root *actor.RootContext, cfg Config) (Handles, error) {
	props, err := Props(cfg)
	if err != nil {
		return Handles{}, err
	}
	pid, err := root.SpawnNamed(props.Configure(cfg.PropsOptions...), "supervisor")
	if err != nil {
		return Handles{}, fmt.Errorf("spawn the supervisor: %w", err)
	}
	return HandlesOf(pid), nil
}

// HandlesOf gives the handles of a supervisor spawned as sup.
func HandlesOf(sup *actor.PID) Handles {
	child := func(name string) *actor.PID { return actor.NewPID(sup.Address, sup.Id+"/"+name) }
	return Handles{Supervisor: sup, PLEG: child(ChildPLEG), Prober: child(ChildProber), Status: child(ChildStatus)}
}

// spawnCoreChildren spawns every fixed child whose props are given.
func (s *supervisor) spawnCoreChildren(ctx actor.Context) {
	for _, c := range coreChildren {
		*c.pid(s) = s.spawnChild(ctx, c)
	}
}

// spawnChild spawns a fixed child when its props are given; if spawning
// fails it is retried at housekeeping, an invalid config is only logged.
func (s *supervisor) spawnChild(ctx actor.Context, c coreChild) *actor.PID {
	newProps := c.props(s.cfg.Children)
	if newProps == nil {
		return nil
	}
	props, err := newProps()
	if err != nil {
		klog.ErrorS(err, "Invalid child actor configuration, not spawning it", "actor", c.name)
		return nil
	}
	pid, err := ctx.SpawnNamed(props.Configure(s.cfg.PropsOptions...), c.name)
	if err != nil {
		klog.ErrorS(err, "Failed to spawn child actor, retrying at housekeeping", "actor", c.name)
		s.lostChildren[c.name] = true
		return nil
	}
	return pid
}

// respawnLostChildren spawns again the fixed children that stopped or
// failed to spawn.
func (s *supervisor) respawnLostChildren(ctx actor.Context) {
	for _, c := range coreChildren {
		if s.lostChildren[c.name] {
			delete(s.lostChildren, c.name)
			*c.pid(s) = s.spawnChild(ctx, c)
		}
	}
}

// coreChildTerminated remembers a stopped fixed child so housekeeping
// respawns it.
func (s *supervisor) coreChildTerminated(who *actor.PID) {
	for _, c := range coreChildren {
		if p := c.pid(s); *p != nil && (*p).Id == who.Id {
			klog.ErrorS(nil, "Child actor stopped, respawning at housekeeping", "actor", c.name)
			*p = nil
			s.lostChildren[c.name] = true
		}
	}
}

// spawnWorker starts the pod actor of uid; a respawn keeps what the old
// record knew (last update, restarts, last error).
func (s *supervisor) spawnWorker(ctx actor.Context, uid types.UID, generation int) *worker {
	props, err := podactor.Props(s.cfg.podConfig(), uid)
	if err != nil {
		klog.ErrorS(err, "Cannot build pod worker", "podUID", uid)
		return nil
	}
	pid, err := ctx.SpawnNamed(props.Configure(s.cfg.PropsOptions...), actorName(string(uid), generation))
	if err != nil {
		klog.ErrorS(err, "Cannot spawn pod worker", "podUID", uid)
		return nil
	}
	w := &worker{uid: uid, pid: pid, generation: generation}
	if old := s.workers[uid]; old != nil {
		w.restarts, w.lastErr, w.last = old.restarts, old.lastErr, old.last
	}
	s.workers[uid] = w
	s.byPID[pid.Id] = uid
	return w
}

// respawn starts a new actor for a worker supervision gave up on (failed →
// a new live record), replaying the desired state.
func (s *supervisor) respawn(ctx actor.Context, old *worker) {
	nw := s.spawnWorker(ctx, old.uid, old.generation+1)
	if nw == nil {
		return
	}
	klog.InfoS("Respawning failed pod worker", "podUID", old.uid, "restarts", old.restarts)
	ctx.Send(nw.pid, s.desiredFor(old.uid))
}

// childFailed records a supervision decision about a pod actor.
func (s *supervisor) childFailed(m *childFailed) {
	uid, ok := s.byPID[m.Child.Id]
	if !ok {
		return
	}
	if w := s.workers[uid]; w != nil {
		w.panicked(m)
	}
}

// childTerminated handles a stopped child: a purged worker is forgotten (and
// restarted when wanted again); any other stop is a failure, respawned later.
// protoactor tells a parent about every child that stops, so children are
// not watched as well (that would deliver Terminated twice); respawned
// workers get a new name (uid~generation) so a late Terminated of the old
// actor is never taken for the new one's.
func (s *supervisor) childTerminated(ctx actor.Context, who *actor.PID) {
	uid, ok := s.byPID[who.Id]
	if !ok {
		s.coreChildTerminated(who)
		return
	}
	delete(s.byPID, who.Id)
	s.usage = nil
	w := s.workers[uid]
	if w == nil || w.pid.Id != who.Id {
		return
	}
	if w.actor != actorPurging {
		w.stoppedUnexpectedly(s.cfg.Clock.Now())
		klog.ErrorS(nil, "Pod worker stopped after repeated failures, respawning later", "podUID", uid,
			"restarts", w.restarts, "lastError", w.lastErr, "respawnAfter", s.cfg.WorkerRespawnDelay)
		return
	}
	delete(s.workers, uid)
	d := s.pods[uid]
	if d == nil {
		return
	}
	if (w.report.RestartRequested || d.readded) && d.pod.DeletionTimestamp == nil {
		d.readded = true
		s.startReadded(ctx, uid)
		return
	}
	d.done = true
}

// startReadded starts a pod added again while its old worker was stopping,
// once that worker is gone and the cleanup of the removed pod, which removes
// everything the runtime has of the UID, is over.
func (s *supervisor) startReadded(ctx actor.Context, uid types.UID) {
	d := s.pods[uid]
	if d == nil || !d.readded || s.workers[uid] != nil || s.cleaning[uid] {
		return
	}
	d.readded = false
	klog.InfoS("Restarting pod worker for a pod added again", "pod", klog.KObj(d.pod), "podUID", uid)
	s.dispatch(ctx, uid, messages.SyncPod{UpdateType: messages.SyncPodCreate, Pod: d.pod, StartTime: s.cfg.Clock.Now()})
}
