// Package podactor is the pod worker of actorlet: one actor per pod UID,
// spawned and supervised by the supervisor (the sync loop). Its mailbox
// replaces the kubelet's per-pod update channel; its behaviours are the
// pod worker's one-way lifecycle:
//
//	          SyncPod{Create,Update,Sync}
//	             ┌──────┐
//	             ▼      │ (sync work: wait for fresh cache, SyncPod)
//	         ┌────────┐─┘
//	start ──▶│  Sync  │
//	         └────────┘
//	             │ deletion timestamp, terminal phase, Kill, orphan
//	             ▼
//	      ┌─────────────┐  shorter grace: cancel the kill, run it again
//	      │ Terminating │◀─┐
//	      └─────────────┘──┘ (kill work: KillPod with the effective grace)
//	             │ kill succeeded
//	             ▼
//	      ┌────────────┐
//	      │ Terminated │ (terminated work: final status)
//	      └────────────┘
//	             │
//	             ▼
//	        [finished] nothing runs again until the supervisor purges
//	                   the actor; a changed pod (a deletion) is published
//	                   with the final status, a Create requests a restart
//
// Receive never blocks: each unit of work runs in a goroutine with a
// cancelable context and comes back to the actor as a message. Only one unit
// is in flight; updates arriving meanwhile coalesce into one pending update.
//
// The actor tells its parent PodWorkerStateChanged on every state change,
// PodSyncCompleted after every unit of work (with the requeue interval) and
// PodStatusComputed with the status derived from the runtime. After a panic,
// supervision restarts the actor with an empty memory: it asks its parent for
// the desired pod (GetDesiredPod) and rebuilds from the runtime.
package podactor
