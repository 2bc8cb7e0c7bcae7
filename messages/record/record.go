// Package record holds the one interface through which every component
// raises Kubernetes-style events about a pod (the kubelet's
// record.EventRecorder). The agent's implementation publishes them on the
// bus (node/events); tests record them (test/testutil.Recorder).
package record

import v1 "k8s.io/api/core/v1"

// EventRecorder records an event about pod (nil for a node-level event)
// of eventType (v1.EventTypeNormal or v1.EventTypeWarning) with a reason
// in CamelCase and a message. Implementations never block the caller.
type EventRecorder interface {
	Eventf(pod *v1.Pod, eventType, reason, messageFmt string, args ...any)
}
