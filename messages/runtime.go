package messages

import "k8s.io/apimachinery/pkg/types"

// The runtime's view of a pod from a list call (the kubelet's
// kubecontainer.Pod). It travels in SyncPod for an orphan (a pod the
// runtime has but no source wants), so it is message data; package cri
// names the same types cri.Pod, cri.Container and cri.ContainerState.

// ContainerState is a container's state as the runtime reports it.
type ContainerState string

const (
	ContainerStateCreated ContainerState = "created"
	ContainerStateRunning ContainerState = "running"
	ContainerStateExited  ContainerState = "exited"
	ContainerStateUnknown ContainerState = "unknown"
)

// RuntimeContainer is one container (or sandbox) of a runtime pod.
type RuntimeContainer struct {
	ID      string
	Name    string
	Image   string
	ImageID string
	// Hash is the spec hash the agent recorded in the container's annotations.
	Hash      uint64
	State     ContainerState
	CreatedAt int64 // unix nanoseconds
}

// RuntimePod is a pod as the runtime has it: sandboxes and containers
// sharing a pod UID label. Name and Namespace come from the labels, so a pod
// no source knows (an orphan) can still be named and killed.
type RuntimePod struct {
	ID         types.UID
	Name       string
	Namespace  string
	CreatedAt  int64
	Containers []*RuntimeContainer
	Sandboxes  []*RuntimeContainer
}
