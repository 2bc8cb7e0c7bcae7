package commands

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/messages/wire"
)

// Node is what the command service needs from the agent. Errors wrapping
// ErrNotFound become 404, *Error keeps its code, context.DeadlineExceeded
// becomes 504 and anything else 500.
type Node interface {
	// ListPods returns every pod the node knows with its live status.
	ListPods(ctx context.Context) ([]*v1.Pod, error)
	// DescribePod returns the pod, its actor's state, probes, back-offs and
	// recent events.
	DescribePod(ctx context.Context, namespace, name string) (*wire.Description, error)
	// LogPath returns the CRI log file of the container's current (or
	// previous) instance.
	LogPath(ctx context.Context, namespace, name, container string, previous bool) (string, error)
	// Exec runs cmd in the container; a non-zero exit is reported in
	// exitCode, not err.
	Exec(ctx context.Context, namespace, name, container string, cmd []string, timeout time.Duration) (stdout, stderr []byte, exitCode int, err error)
	// Restart restarts the pod's containers, or one container.
	Restart(ctx context.Context, namespace, name, container string) error
	// Evict kills the pod, which ends Failed with reason.
	Evict(ctx context.Context, namespace, name string, gracePeriodSeconds *int64, reason string) error
}
