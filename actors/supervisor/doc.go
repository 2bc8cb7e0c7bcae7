// Package supervisor is actorlet's sync loop (the kubelet's syncLoop,
// HandlePod* handlers, admission and housekeeping) as the parent actor of
// every pod actor:
//
//	                      ┌──────────────┐
//	PodUpdate, SourcesReady│              │ SyncPod, RestartPod, probe failures
//	PodLifecycleEvent ───▶ │  supervisor  │ ──────────────▶ pod actor <uid> (one per pod)
//	ProbeResultChanged     │              │ ◀────────────── PodSyncCompleted,
//	TerminatePod, ...      └──────────────┘                 PodWorkerStateChanged,
//	                        │    │     │                    PodStatusComputed
//	              children: pleg prober status eviction (optional)
//
// Pod actors are spawned here with the supervision strategy declared here:
// a panicking pod actor is restarted with exponential back-off, at most a few
// times within a window; beyond that it is stopped, the failure is logged
// and shown by DescribePodWorker, and the worker is respawned later from the
// desired state, never silently lost.
//
// The supervisor keeps one record per pod actor (worker.go). Its actorState
// follows the actor's own lifecycle, apart from the pod's work (sync →
// terminating → terminated, reported by the actor and kept in
// worker.report):
//
//	         spawnWorker
//	              │
//	              ▼         panic (childFailed)
//	┌─────────► live ───────────────────────────► restarting
//	│            │  ◄────────────────────────────     │
//	│            │    restarted (GetDesiredPod)       │ supervision gives up,
//	│            │                                    │ then Terminated
//	│            │ stopped on its own (Terminated)    ▼
//	│            ├──────────────────────────────────► failed
//	│            │                                    │
//	│            │ work finished and the pod removed  │ WorkerRespawnDelay passed:
//	│            │ (at once, cleanup started) or      │ respawn as uid~generation+1
//	│            │ re-created (housekeep)             │
//	│            ▼                                    │ (a new record, live)
//	│         purging ──Terminated──► record deleted  │
//	│                   (re-created pod: spawn again) │
//	└─────────────────────────────────────────────────┘
//
// Updates go to live and restarting actors (a restarting actor's mailbox
// holds them until it runs again); to failed and purging ones they are only
// remembered (worker.last) and replayed by the respawned actor.
//
// The fixed children (pleg, prober, status, eviction) are a table (coreChildren):
// spawned at start under their names, respawned at housekeeping when they
// stop; Handles gives their PIDs to the agent.
//
// Ticks come from the injected clock: every SyncPeriod (1 s) pods whose
// requeue is due are synced; every HousekeepingPeriod (2 s) orphans are
// killed (once sources are ready) and the runtime garbage-collected. A
// finished worker is purged as soon as nothing keeps it: its pod removed
// (then its runtime leftovers are cleaned up at once) or added again (then
// the pod starts afresh once the old worker is gone and any cleanup of the
// UID is over). Runtime calls run in goroutines and come back as messages,
// so Receive never blocks.
package supervisor
