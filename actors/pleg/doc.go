// Package pleg is actorlet's pod lifecycle event generator (the kubelet's
// PLEG) and the pod status cache it keeps fresh.
//
// The PLEG actor relists the runtime on a clock-driven tick, diffs every
// pod's containers and sandboxes against the previous relist, refreshes the
// Cache for each pod that changed, and only then tells its parent (the
// supervisor) what happened, as messages.PodLifecycleEvent facts. When the
// runtime streams CRI container events it switches to evented mode: events
// become lifecycle facts as they arrive and the relist only runs every
// EventedRelistPeriod as a safety net. An event that carries its pod's
// status (containerd 2.x's and the process runtime's do: the sandbox and
// its containers) refreshes the Cache with no runtime call when it covers
// what the Cache holds of the pod (EventStatuses); any other is followed
// by a read of the pod.
//
//	          tick (RelistPeriod)
//	               │
//	┌──────────────▼─────────────┐   GetPods / GetPodStatus
//	│ relisting ◄──stream ends── │ ─────────────────────────► Runtime
//	│    │                    ▲  │
//	│ stream established      │  │   GetContainerEvents / Status
//	│    ▼                    │  │ ─────────────────────────► CRI
//	│ evented (relist every   │  │
//	│   EventedRelistPeriod) ─┘  │
//	└──────────────┬─────────────┘
//	               │ PodLifecycleEvent, RelistHealthChanged,
//	               ▼ RuntimeHealthChanged
//	          parent (supervisor)
//
// Every call to the runtime runs in a goroutine with a cancelable context
// and comes back to the actor as a message; Receive never blocks on I/O.
package pleg

import (
	"context"

	"github.com/actorlet/actorlet/cri"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Runtime is what PLEG needs from the runtime manager
// (cri/kuberuntime.Manager satisfies it).
type Runtime interface {
	// GetPods lists the runtime's pods; all includes exited containers and
	// not-ready sandboxes.
	GetPods(ctx context.Context, all bool) ([]*cri.Pod, error)
	// GetPodStatus inspects one pod's sandboxes and containers.
	GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*cri.PodStatus, error)
}

// EventStatuses is a Runtime that reads a pod's status from a container
// event that carries it (cri/kuberuntime.Manager.PodStatusFromEvent):
// the evented PLEG then caches it with no runtime call, as the kubelet's
// does, when it covers all the PLEG knows of the pod.
type EventStatuses interface {
	PodStatusFromEvent(ev *runtimeapi.ContainerEventResponse) (*cri.PodStatus, bool)
}
