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
