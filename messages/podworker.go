package messages

import (
	"k8s.io/apimachinery/pkg/types"
)

// GetDesiredPod is sent by a pod actor that supervision restarted (and so
// lost its memory) to its parent, the supervisor; the reply is DesiredPod.
type GetDesiredPod struct {
	UID types.UID
}

// DesiredPod answers GetDesiredPod: the update that rebuilds the worker
// (a Create of the desired pod, or a Kill when the pod is no longer wanted),
// and how many times supervision restarted the worker so far. Found is false
// when the supervisor no longer knows the UID (the actor should stop).
type DesiredPod struct {
	Found         bool
	Update        SyncPod
	ActorRestarts int
}

// GetPodLifecycle asks the supervisor what other components may do with a
// pod's runtime state; the reply is PodLifecycle. Before the first
// housekeeping pass unknown pods are answered conservatively.
type GetPodLifecycle struct {
	UID types.UID
}

// PodLifecycle answers GetPodLifecycle (the kubelet's pod worker queries).
type PodLifecycle struct {
	UID   types.UID
	Known bool // a worker exists for the UID
	// CouldHaveRunningContainers: the pod may still have running containers.
	CouldHaveRunningContainers bool
	// ShouldContainersBeTerminating: the pod's containers should be stopping
	// or stopped.
	ShouldContainersBeTerminating bool
	// MayRemoveRuntime: the pod's containers and sandboxes may be removed.
	MayRemoveRuntime bool
	// MayRemoveContent: the pod's volumes and directories may be removed.
	MayRemoveContent bool
}
