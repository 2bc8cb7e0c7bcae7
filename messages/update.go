package messages

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// Op is what a PodUpdate does to the pods it carries.
type Op int

const (
	// OpSet is a full snapshot of one source: pods it no longer lists are gone.
	OpSet Op = iota
	// OpAdd introduces pods.
	OpAdd
	// OpUpdate changes pods' specs.
	OpUpdate
	// OpDelete asks for graceful deletion: the pods carry a deletion timestamp
	// and grace period.
	OpDelete
	// OpRemove says the pods are gone from their source.
	OpRemove
	// OpReconcile carries pods whose status, not spec, differs.
	OpReconcile
)

func (o Op) String() string {
	switch o {
	case OpSet:
		return "SET"
	case OpAdd:
		return "ADD"
	case OpUpdate:
		return "UPDATE"
	case OpDelete:
		return "DELETE"
	case OpRemove:
		return "REMOVE"
	case OpReconcile:
		return "RECONCILE"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// Names of the pod sources. A pod's source is recorded in its annotation
// ConfigSourceAnnotation, as the kubelet does.
const (
	SourceFile   = "file"   // static pods from --pod-manifest-path
	SourceRemote = "remote" // desired pods delivered over NATS
	SourceAll    = "*"
)

// Annotations the agent sets on pods it receives.
const (
	ConfigSourceAnnotation = "kubernetes.io/config.source"
	ConfigHashAnnotation   = "kubernetes.io/config.hash"
	ConfigMirrorAnnotation = "kubernetes.io/config.mirror"
)

// IsStatic reports a static pod (from the manifest directory), as the
// kubelet's IsStaticPod.
func IsStatic(p *v1.Pod) bool {
	return p.Annotations[ConfigSourceAnnotation] == SourceFile
}

// PodUpdate is a change of desired pods from one source.
type PodUpdate struct {
	Op     Op
	Pods   []*v1.Pod
	Source string
}

func (u PodUpdate) String() string {
	return fmt.Sprintf("PodUpdate{%s %d pods from %q}", u.Op, len(u.Pods), u.Source)
}

// SourcesReady reports that every configured source has delivered its first
// state, so housekeeping may now kill what no source wants.
type SourcesReady struct {
	Sources []string
}
