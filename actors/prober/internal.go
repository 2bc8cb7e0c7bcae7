package prober

import (
	"fmt"
	"time"

	"github.com/actorlet/actorlet/messages"
	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The messages below stay inside the package: they pass between the
// manager and its workers.

// workerKey names one probe worker.
type workerKey struct {
	uid       types.UID
	container string
	kind      messages.ProbeKind
}

func (k workerKey) String() string {
	return fmt.Sprintf("%s/%s/%s", k.uid, k.container, k.kind)
}

// targetUpdate tells a worker what its container looks like now.
type targetUpdate struct {
	pod         *v1.Pod
	containerID string // as in the pod status ("containerd://abc" or "abc")
	running     bool
	startedAt   time.Time
	podIP       string
	// started is the startup gate: the container has no startup probe or
	// its startup probe succeeded for this container ID.
	started bool
}

// tick is the worker's period firing.
type tick struct{}

// probeDone is the outcome of one probe run, back from its goroutine.
type probeDone struct {
	seq         int
	containerID string
	result      messages.ProbeResult
	message     string
	err         error
	at          time.Time
}

// workerReport is a worker's state after anything changed; changed is set
// when the result differs from the last one reported.
type workerReport struct {
	from    *actor.PID
	key     workerKey
	state   messages.ProbeState
	changed *messages.ProbeResultChanged
}
