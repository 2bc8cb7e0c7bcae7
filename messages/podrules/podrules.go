// Package podrules holds the pod rules every part of actorlet applies the
// same way (the kubelet's and the API server's): defaults a pod gets when
// its spec leaves them out, the node's default pod capacity, which phases
// are terminal, and the Initialized condition. It depends on the Kubernetes
// API types only, so the agent, the runtime manager and actorletctl share
// it.
package podrules

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// DefaultGracePeriodSeconds is a pod's termination grace period when its
// spec sets none.
const DefaultGracePeriodSeconds int64 = 30

// DefaultMaxPods is a node's pod capacity when not configured.
const DefaultMaxPods = 110

// Probe defaults, as in the Kubernetes API.
const (
	DefaultProbePeriodSeconds    int32 = 10
	DefaultProbeTimeoutSeconds   int32 = 1
	DefaultProbeSuccessThreshold int32 = 1
	DefaultProbeFailureThreshold int32 = 3
)

// IsTerminal reports whether phase is Succeeded or Failed: a pod in it
// never runs again and never leaves it.
func IsTerminal(phase v1.PodPhase) bool {
	return phase == v1.PodSucceeded || phase == v1.PodFailed
}

// ReasonContainersNotInitialized is the reason of a False Initialized
// condition.
const ReasonContainersNotInitialized = "ContainersNotInitialized"

// InitializedCondition is the pod's Initialized condition given the init
// containers that have not completed (in spec order): True when there are
// none.
func InitializedCondition(incomplete []string) v1.PodCondition {
	if len(incomplete) == 0 {
		return v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue}
	}
	return v1.PodCondition{
		Type:    v1.PodInitialized,
		Status:  v1.ConditionFalse,
		Reason:  ReasonContainersNotInitialized,
		Message: fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(incomplete, " ")),
	}
}
