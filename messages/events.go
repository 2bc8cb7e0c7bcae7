package messages

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
)

// PodLifecycleEventType names what PLEG saw happen to a container.
type PodLifecycleEventType string

const (
	ContainerStarted PodLifecycleEventType = "ContainerStarted"
	ContainerDied    PodLifecycleEventType = "ContainerDied"
	ContainerRemoved PodLifecycleEventType = "ContainerRemoved"
	ContainerChanged PodLifecycleEventType = "ContainerChanged"
	// SandboxChanged: a sandbox of the pod appeared, changed state or was
	// removed (no container is named). Like every event it makes the
	// supervisor sync the pod.
	SandboxChanged PodLifecycleEventType = "SandboxChanged"
)

// PodLifecycleEvent is a fact PLEG derived from two relists (or a CRI
// container event): something happened to a container of the pod.
type PodLifecycleEvent struct {
	PodUID      types.UID
	Type        PodLifecycleEventType
	ContainerID string // CRI container ID; empty for SandboxChanged
}

func (e PodLifecycleEvent) String() string {
	return fmt.Sprintf("%s{pod %s container %s}", e.Type, e.PodUID, e.ContainerID)
}

// ProbeKind is liveness, readiness or startup.
type ProbeKind string

const (
	Liveness  ProbeKind = "liveness"
	Readiness ProbeKind = "readiness"
	Startup   ProbeKind = "startup"
)

// ProbeResult is the outcome of a probe.
type ProbeResult int

const (
	ProbeUnknown ProbeResult = iota
	ProbeSuccess
	ProbeFailure
)

func (r ProbeResult) String() string {
	switch r {
	case ProbeSuccess:
		return "Success"
	case ProbeFailure:
		return "Failure"
	}
	return "Unknown"
}

// ProbeResultChanged is sent only when a probe's result differs from the
// previous one for the same container.
type ProbeResultChanged struct {
	PodUID        types.UID
	ContainerName string
	ContainerID   string
	Kind          ProbeKind
	Result        ProbeResult
	Message       string // why it failed, for events and describe
}

func (p ProbeResultChanged) String() string {
	return fmt.Sprintf("ProbeResultChanged{pod %s container %s %s=%s}", p.PodUID, p.ContainerName, p.Kind, p.Result)
}
