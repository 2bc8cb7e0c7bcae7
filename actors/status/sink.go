package status

import (
	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/messages"
)

// Sink receives published pod statuses. Implementations must not block:
// the status actor calls them from Receive (the bus sink queues).
type Sink interface {
	// PodStatusChanged gets a pod whose status changed; the pod is the
	// sink's to keep.
	PodStatusChanged(messages.PodStatusChanged)
	// PodStatusRemoved says the pod is gone and its status dropped.
	PodStatusRemoved(pod *v1.Pod)
}
