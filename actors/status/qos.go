package status

import (
	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/messages/podrules"
)

// podQOS is the pod's QoS class (podrules.QOSClass).
func podQOS(pod *v1.Pod) v1.PodQOSClass { return podrules.QOSClass(pod) }
