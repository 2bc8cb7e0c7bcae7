package cri

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/messages"
)

// This file holds the runtime's view of pods: what the runtime reports,
// grouped by pod UID (the kubelet's kubecontainer.Pod and PodStatus). They
// are plain data, safe to send in messages once built.

// ContainerState, Container and Pod are the runtime's list view of pods.
// They travel in messages (an orphan's SyncPod), so they are declared in
// package messages; these names keep the runtime code reading as before.
type (
	ContainerState = messages.ContainerState
	Container      = messages.RuntimeContainer
	Pod            = messages.RuntimePod
)

const (
	ContainerStateCreated = messages.ContainerStateCreated
	ContainerStateRunning = messages.ContainerStateRunning
	ContainerStateExited  = messages.ContainerStateExited
	ContainerStateUnknown = messages.ContainerStateUnknown
)

// ContainerStatus is the detailed status of one container instance.
type ContainerStatus struct {
	ID           string
	Name         string
	State        ContainerState
	CreatedAt    time.Time
	StartedAt    time.Time
	FinishedAt   time.Time
	ExitCode     int
	Image        string
	ImageID      string
	Hash         uint64
	RestartCount int
	Reason       string
	Message      string
}

// PodStatus is the runtime status of a pod at TimeStamp: every container
// instance (newest first per name) and sandbox the runtime still has.
type PodStatus struct {
	ID                types.UID
	Name              string
	Namespace         string
	IPs               []string
	ContainerStatuses []*ContainerStatus
	SandboxStatuses   []*runtimeapi.PodSandboxStatus
	TimeStamp         time.Time
}

// FindContainerStatusByName returns the newest status of the named container.
func (s *PodStatus) FindContainerStatusByName(name string) *ContainerStatus {
	if s == nil {
		return nil
	}
	for _, c := range s.ContainerStatuses {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// FindContainerStatusByID returns the status of the container instance.
func (s *PodStatus) FindContainerStatusByID(id string) *ContainerStatus {
	if s == nil {
		return nil
	}
	for _, c := range s.ContainerStatuses {
		if c.ID == id {
			return c
		}
	}
	return nil
}

// RunningContainers returns the statuses of containers in the running state.
func (s *PodStatus) RunningContainers() []*ContainerStatus {
	if s == nil {
		return nil
	}
	var out []*ContainerStatus
	for _, c := range s.ContainerStatuses {
		if c.State == ContainerStateRunning {
			out = append(out, c)
		}
	}
	return out
}

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
