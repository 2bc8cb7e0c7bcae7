// Package messages holds the plain data sent between actorlet's actors.
// Facts are named in the past tense, commands in the imperative, requests
// Get/List/Describe with their reply named after what it carries. No type
// here has behaviour beyond String(), and nothing here depends on the
// runtime (cri) or on actors. Subpackages: wire, the bus protocol between
// nodes and operators; podrules, the pod rules every component applies
// alike.
//
// Convention: messages travel between actors as pointers (&messages.SyncPod{…})
// and receivers match pointer types only; a sender must not modify a message
// after sending it. Replies to requests are pointers too.
//
// Every message, with sender → receiver:
//
//	PodUpdate             sources mux → supervisor          desired pods changed (SET/ADD/UPDATE/DELETE/REMOVE/RECONCILE)
//	SourcesReady          sources mux → supervisor          every configured source delivered its first state
//	PodLifecycleEvent     PLEG → supervisor                 a container started/died/was removed/changed, or a sandbox changed
//	ProbeResultChanged    prober → supervisor → pod actor, status   a probe's result changed (liveness, readiness, startup)
//	RelistHealthChanged   PLEG → supervisor                 relisting became healthy or unhealthy
//	RuntimeHealthChanged  PLEG → supervisor                 the CRI runtime became ready or not ready
//	NodeLabelsChanged     operator → supervisor             the node's labels changed at run time (admission uses them)
//	SyncPod               supervisor → pod actor            create/update/sync/kill one pod (kubelet's UpdatePod)
//	TerminatePod          operator → supervisor             kill or evict a pod (KillOptions); the supervisor sends the pod actor a SyncPod kill
//	RestartPod            operator → supervisor → pod actor restart a pod's containers (or one container)
//	PodSyncCompleted      pod actor → supervisor            a sync or kill finished; when to sync next
//	PodWorkerStateChanged pod actor → supervisor            the worker moved Sync → Terminating → Terminated, or finished
//	PodStatusComputed     pod actor → supervisor → status, prober   status derived from the runtime after a sync
//	PodRejected           supervisor → status               admission rejected a pod (phase Failed, reason, message)
//	PodForgotten          supervisor → status, prober       a pod is gone: drop what is kept for it
//	PodStatusChanged      status → status sink (bus)        a pod's published status changed
//	GetDesiredPod         restarted pod actor → supervisor  request: the update that rebuilds it
//	DesiredPod            supervisor → pod actor            reply to GetDesiredPod
//	ListPodStatuses       operator → status                 request: every pod with its status
//	PodStatusList         status → operator                 reply to ListPodStatuses
//	DescribePodWorker     operator → supervisor → pod actor request: the actor's state
//	PodWorkerDescription  pod actor (or supervisor) → operator   reply to DescribePodWorker
//	ListProbes            operator → prober                 request: one pod's probe workers
//	ProbeStates           prober → operator                 reply to ListProbes (one ProbeState per worker)
//	GetNodeConditions     node heartbeat, eviction → supervisor  request: runtime/PLEG health and pods (active, terminated)
//	NodeConditions        supervisor → node heartbeat       reply to GetNodeConditions
//	StartNodeShutdown     node shutdown (logind) → supervisor   request: terminate pods by priority groups, refuse new ones
//	NodeShutdownDone      supervisor → node shutdown        reply to StartNodeShutdown: every group done (or canceled)
//	CancelNodeShutdown    node shutdown (logind) → supervisor   the system shutdown was canceled: admit again, stop terminating
//
// Data carried inside messages: KillOptions (SyncPod, TerminatePod),
// ShutdownGroup (StartNodeShutdown),
// container.Pod (an orphan's SyncPod: the runtime's list view of a pod,
// from the runtime model in cri/container), ProbeState (ProbeStates).
// "operator" is the command service (node/commands) acting for
// actorletctl.
package messages
