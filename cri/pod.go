package cri

import (
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri/container"
)

// The runtime's view of pods is package container's model; these names
// keep the runtime code reading as cri.Pod, cri.PodStatus and so on.
type (
	ContainerState  = container.ContainerState
	Container       = container.Container
	Pod             = container.Pod
	ContainerStatus = container.ContainerStatus
	PodStatus       = container.PodStatus
	APIPodStatus    = container.APIPodStatus
)

const (
	ContainerStateCreated = container.ContainerStateCreated
	ContainerStateRunning = container.ContainerStateRunning
	ContainerStateExited  = container.ContainerStateExited
	ContainerStateUnknown = container.ContainerStateUnknown
)

// ProbeState is what the probe workers concluded about one container
// instance that a runtime sync acts on (the kubelet's liveness and startup
// result caches).
type ProbeState struct {
	// Failed: the liveness or startup probe failed; the container is
	// killed and restarted per policy. Message says why.
	Failed  bool
	Message string
	// Startup: the failed probe is the startup probe (else liveness); the
	// kill uses that probe's terminationGracePeriodSeconds when set.
	Startup bool
	// Started: the startup probe succeeded. A sidecar (restartable init
	// container) with a startup probe lets the next container start only
	// once it is Started.
	Started bool
}

// Probes maps runtime container IDs to their probe state.
type Probes map[string]ProbeState

// Failed reports whether the instance id failed a liveness or startup
// probe, and why.
func (p Probes) Failed(id string) (string, bool) {
	s, ok := p[id]
	return s.Message, ok && s.Failed
}

// Started reports whether the instance id's startup probe succeeded.
func (p Probes) Started(id string) bool { return p[id].Started }

// ContainerStateOf is the model's state of a CRI container state.
func ContainerStateOf(s runtimeapi.ContainerState) ContainerState {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return ContainerStateCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return ContainerStateRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return ContainerStateExited
	}
	return ContainerStateUnknown
}
