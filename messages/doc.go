// Package messages holds the plain data sent between actorlet's actors and
// across the bus. Facts are named in the past tense, commands in the
// imperative. No type here has behaviour beyond String().
//
// Convention: messages travel between actors as pointers (&messages.SyncPod{…})
// and receivers match pointer types; a sender must not modify a message after
// sending it. Replies to requests are pointers too.
//
// Every message, with sender → receiver:
//
//	PodUpdate            sources mux → supervisor        desired pods changed (SET/ADD/UPDATE/DELETE/REMOVE/RECONCILE)
//	SourcesReady         sources mux → supervisor        every configured source delivered its first state
//	PodLifecycleEvent    PLEG → supervisor               a container started/died/was removed/changed
//	ProbeResultChanged   prober → supervisor             a probe's result changed (liveness, readiness, startup)
//	SyncPod              supervisor → pod actor          create/update/sync/kill one pod (kubelet's UpdatePod)
//	TerminatePod         operator → supervisor → pod     kill or evict a pod with an optional grace period
//	RestartPod           operator → supervisor → pod     restart a pod's containers (or one container)
//	PodSyncCompleted     pod actor → supervisor          a sync or kill finished; carries the worker's state
//	PodWorkerStateChanged pod actor → supervisor         the worker moved Sync → Terminating → Terminated
//	PodStatusComputed    pod actor → supervisor → status, prober   status derived from the runtime after a sync
//	PodStatusRejected    supervisor → status             admission refused a pod (phase Failed, reason, message)
//	PodForgotten         supervisor → status, prober     a pod is gone: drop what is kept for it
//	PodStatusChanged     status → status sink (bus)      a pod's published status changed
//	RelistHealthChanged  PLEG → supervisor               relisting became healthy or unhealthy
//	RuntimeHealthChanged PLEG → supervisor               the CRI runtime became ready or not ready
//	ListPodStatuses      operator → status               request: every pod with its status (reply PodStatusList)
//	DescribePodWorker    operator → supervisor → pod     request: the actor's state (reply PodWorkerDescription)
//	ListProbes           operator → prober               request: one pod's probe workers (reply ProbeStates)
//	GetNodeConditions    node heartbeat → supervisor     request: runtime/PLEG health and pods (reply NodeConditions)
package messages
