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
//	              children: pleg prober status (optional)
//
// Pod actors are spawned here with the supervision strategy declared here:
// a panicking pod actor is restarted with exponential back-off, at most a few
// times within a window; beyond that it is stopped, the failure is logged
// and shown by DescribePodWorker, and the worker is respawned later from the
// desired state, never silently lost.
//
// Ticks come from the injected clock: every SyncPeriod (1 s) pods whose
// requeue is due are synced; every HousekeepingPeriod (2 s) finished workers
// are purged, orphans killed (once sources are ready) and the runtime
// garbage-collected. Runtime calls run in goroutines and come back as
// messages, so Receive never blocks.
package supervisor
