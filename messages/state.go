package messages

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodWorkType is the pod actor's one-way lifecycle state.
type PodWorkType int

const (
	SyncWork        PodWorkType = iota // containers are (to be) running
	TerminatingWork                    // containers are being stopped
	TerminatedWork                     // stopped; waiting to be forgotten
)

func (w PodWorkType) String() string {
	switch w {
	case SyncWork:
		return "sync"
	case TerminatingWork:
		return "terminating"
	case TerminatedWork:
		return "terminated"
	}
	return fmt.Sprintf("PodWorkType(%d)", int(w))
}

// PodWorkerStateChanged is sent by a pod actor to the supervisor whenever its
// state moves forward, and once more when its work is finished (the actor
// may then be stopped and its UID purged).
type PodWorkerStateChanged struct {
	UID              types.UID
	FullName         string // namespace/name
	WorkType         PodWorkType
	Finished         bool
	RestartRequested bool
	Static           bool
}

// PodSyncCompleted reports one finished unit of pod work to the supervisor.
type PodSyncCompleted struct {
	UID        types.UID
	UpdateType UpdateType
	Err        string // empty on success
	// Duration is the runtime work itself, from the arrival of fresh status
	// (the wait for PLEG is excluded, as in the kubelet's metric).
	Duration time.Duration
	// RequeueAfter is when the pod wants its next sync: 0 means now (its
	// phase changed), else the jittered resync or error-retry interval. The
	// supervisor's sync tick dispatches due pods.
	RequeueAfter time.Duration
}

// PodStatusComputed carries the status a pod actor derived from the runtime
// after a sync: what the runtime manager read (container statuses, IPs,
// start time) with the phase set, before the status actor applies probe
// readiness and computes the conditions. SandboxReady is the runtime fact
// behind PodReadyToStartContainers.
type PodStatusComputed struct {
	Pod          *v1.Pod
	Status       v1.PodStatus
	SandboxReady bool
}

// PodRejected records an admission failure: the pod gets phase Failed
// with the reason and message and is never run.
type PodRejected struct {
	Pod     *v1.Pod
	Reason  string
	Message string
}

// PodForgotten tells the status and prober actors that a pod is gone.
type PodForgotten struct {
	UID types.UID
}

// PodStatusChanged is a published change of a pod's status: Pod carries the
// spec it was computed for and the status in Pod.Status.
type PodStatusChanged struct {
	Pod    *v1.Pod
	Static bool
}
