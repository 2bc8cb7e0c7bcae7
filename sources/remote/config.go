package remote

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/actorlet/actorlet/bus"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/record"
	"github.com/actorlet/actorlet/messages/wire"
)

// StatusEntries is what the source needs of the owner of the status
// entries (publish.StatusPublisher implements it).
type StatusEntries interface {
	// Read returns the pod of the status entry of namespace/name, nil when
	// there is none.
	Read(ctx context.Context, namespace, name string) (*v1.Pod, error)
	WriteNow(ctx context.Context, pod *v1.Pod) error
	DeleteIf(ctx context.Context, namespace, name string, match func(*v1.Pod) bool) bool
	// PruneStale reports whether the prune is complete (no entry of an
	// earlier run it should have deleted may be left).
	PruneStale(ctx context.Context, source string, keep []wire.PodRef) bool
}

// Config of a remote source.
type Config struct {
	// Bus is the node's view of the bus (a *bus.Conn); EnsureProtocol
	// must have run.
	Bus bus.Client
	// NodeName is this node: its keys are node.<NodeName>.>, and every
	// delivered pod gets spec.nodeName = NodeName.
	NodeName string
	// NodeLabels decide which fleet pods (spec.nodeSelector, required node
	// affinity) run here; NodeTaints which they must tolerate. SetNode
	// changes both at run time.
	NodeLabels map[string]string
	NodeTaints []v1.Taint
	// Out receives the updates, one call at a time, in order.
	Out func(messages.PodUpdate)
	// Statuses owns the node's status entries (publish.StatusPublisher):
	// the source writes and clears the Failed status of rejected keys and
	// prunes its stale entries through it.
	Statuses StatusEntries
	// Recorder, optional, gets a FailedValidation event per rejected entry.
	Recorder record.EventRecorder
	// OnInvalid, optional, is told about every rejected entry.
	OnInvalid func(key string, err error)
	// OnRemove, optional, is told the cause of every pod the source
	// removes (metrics).
	OnRemove func(cause RemovalCause)
	// Clock paces re-watch back-off; nil means the real clock.
	Clock clock.Clock
}

func (c *Config) validate() error {
	var errs []error
	if c.Bus == nil {
		errs = append(errs, errors.New("remote source config: bus is required"))
	}
	if c.NodeName == "" {
		errs = append(errs, errors.New("remote source config: nodeName is required"))
	}
	if c.Out == nil {
		errs = append(errs, errors.New("remote source config: out is required"))
	}
	if c.Statuses == nil {
		errs = append(errs, errors.New("remote source config: statuses is required"))
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return errors.Join(errs...)
}
