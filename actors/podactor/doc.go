// Package podactor is the pod worker of actorlet: one actor per pod UID,
// spawned and supervised by the supervisor (the sync loop). Its mailbox
// replaces the kubelet's per-pod update channel. Its one lifecycle state
// (the field state, lifecycle.go; the kubelet's podSyncStatus) moves one
// way:
//
//	          SyncPod{Create,Update,Sync}
//	             ┌──────┐
//	             ▼      │ (sync work: wait for fresh cache, SyncPod)
//	        ┌─────────┐─┘
//	start ─▶│ syncing │
//	        └─────────┘
//	             │ deletion timestamp, terminal phase (a sync's, or the
//	             │ pod's status: the last one published), Kill, orphan,
//	             │ active deadline passed
//	             ▼
//	      ┌─────────────┐  shorter grace: cancel the kill, run it again
//	      │ terminating │◀─┐
//	      └─────────────┘──┘ (kill work: KillPod with the effective grace)
//	             │ kill succeeded (or terminal on first sight, nothing running)
//	             ▼
//	      ┌────────────┐
//	      │ terminated │ (terminated work: final status)
//	      └────────────┘
//	             │ final status published
//	             ▼
//	      ┌────────────┐ nothing runs again until the supervisor purges the
//	      │  finished  │ actor; a changed pod (a deletion) is published with
//	      └────────────┘ the final status, a Create requests a restart
//
// It reports the state as a work type (syncing: sync; terminating:
// terminating; terminated and finished: terminated) and Finished.
//
// The per-pod concerns are parts with one life (parts.go): the active
// deadline (deadline.go), the retry at a back-off's end (retry.go), the
// probe results a sync needs, and an operator's restart requests. Each
// learns every sync's result, is reset when the pod starts terminating, and
// stops with the actor; the two timers are actorutil.After.
//
// Receive never blocks: each unit of work runs in a goroutine with a
// cancelable context and comes back to the actor as a message. Only one unit
// is in flight; updates arriving meanwhile coalesce into one pending update.
//
// The actor tells its parent PodWorkerStateChanged on every state change,
// PodSyncCompleted after every unit of work (with the requeue interval) and
// PodStatusComputed with the status derived from the runtime (what the
// runtime manager's ConvertPodStatus read, with the phase of
// podrules.PodPhase: a terminal one moves the pod to Terminating; the
// conditions are the status actor's). After a panic,
// supervision restarts the actor with an empty memory: it asks its parent for
// the desired pod (GetDesiredPod) and rebuilds from the runtime.
package podactor
