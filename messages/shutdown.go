package messages

// ShutdownGroup is one step of a graceful node shutdown (the kubelet's
// ShutdownGracePeriodByPodPriority entry): the pods whose priority is at
// least Priority and below the next group's are terminated together, each
// with a grace period of at most GracePeriodSeconds, and the next group
// starts once they are all gone or GracePeriodSeconds have passed.
type ShutdownGroup struct {
	Priority           int32
	GracePeriodSeconds int64
}

// StartNodeShutdown asks the supervisor to shut the node down gracefully:
// admission refuses new pods, the node reports not ready, and the active
// pods are terminated group by group, lowest priority first. Groups are
// sorted by ascending Priority. The supervisor answers NodeShutdownDone to
// the sender once the last group is done (or the shutdown was canceled).
type StartNodeShutdown struct {
	Groups []ShutdownGroup
}

// CancelNodeShutdown ends a shutdown in progress (logind's
// PrepareForShutdown(false)): no further group is terminated, pods are
// admitted again and the node reports ready. Pods already terminated stay
// terminated.
type CancelNodeShutdown struct{}

// NodeShutdownDone answers StartNodeShutdown.
type NodeShutdownDone struct {
	// Terminated is how many pods were asked to terminate.
	Terminated int
	// Remaining names the pods still terminating when the last group's
	// time ran out.
	Remaining []string
	// Canceled is set when CancelNodeShutdown ended it early.
	Canceled bool
}
