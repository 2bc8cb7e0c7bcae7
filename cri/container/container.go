// Package container is the runtime's model of pods: what a CRI runtime
// reports, grouped by pod UID (the kubelet's kubecontainer.Pod and
// PodStatus). It is a leaf: plain data that package cri builds, the PLEG
// caches, the pod actors act on, and messages carry (an orphan's SyncPod
// holds the runtime's list view of it).
package container

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ContainerState is a container's state as the runtime reports it.
type ContainerState string

const (
	ContainerStateCreated ContainerState = "created"
	ContainerStateRunning ContainerState = "running"
	ContainerStateExited  ContainerState = "exited"
	ContainerStateUnknown ContainerState = "unknown"
)

// Container is one container (or sandbox) of a runtime pod, from a list call.
type Container struct {
	ID      string
	Name    string
	Image   string
	ImageID string
	// Hash is the spec hash the agent recorded in the container's annotations.
	Hash      uint64
	State     ContainerState
	CreatedAt int64 // unix nanoseconds
}

// Pod is a pod as the runtime has it: sandboxes and containers
// sharing a pod UID label. Name and Namespace come from the labels, so a pod
// no source knows (an orphan) can still be named and killed.
type Pod struct {
	ID         types.UID
	Name       string
	Namespace  string
	CreatedAt  int64
	Containers []*Container
	Sandboxes  []*Container
}

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
	return s.findContainerStatus(func(c *ContainerStatus) bool { return c.Name == name })
}

// FindContainerStatusByID returns the status of the container instance.
func (s *PodStatus) FindContainerStatusByID(id string) *ContainerStatus {
	return s.findContainerStatus(func(c *ContainerStatus) bool { return c.ID == id })
}

// findContainerStatus returns the first of ContainerStatuses that match
// accepts, or nil.
func (s *PodStatus) findContainerStatus(match func(*ContainerStatus) bool) *ContainerStatus {
	if s == nil {
		return nil
	}
	for _, c := range s.ContainerStatuses {
		if match(c) {
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

// APIPodStatus is what the runtime manager reads of a pod for its API
// status (the kubelet's ConvertPodStatusToAPIPodStatus): Status holds the
// container statuses with their waiting reasons, the pod IPs, the host IP
// and the start time, and neither a phase nor a condition (the phase rule
// is podrules.PodPhase, the conditions are the status actor's).
// SandboxReady is the one runtime fact a condition needs: the newest
// sandbox is ready and has its network (PodReadyToStartContainers).
type APIPodStatus struct {
	Status       v1.PodStatus
	SandboxReady bool
}
