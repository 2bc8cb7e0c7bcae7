package remote

import (
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/actorlet/actorlet/cmd/actorlet/bus"
	"github.com/actorlet/actorlet/messages"
)

// Recorder records events about pods (the events engineer's recorder fits).
type Recorder interface {
	Eventf(pod *v1.Pod, eventType, reason, messageFmt string, args ...any)
}

// Config of a remote source.
type Config struct {
	// Conn is the bus connection; EnsureProtocol must have run.
	Conn *bus.Conn
	// NodeName is this node: its keys are node.<NodeName>.>, and every
	// delivered pod gets spec.nodeName = NodeName.
	NodeName string
	// NodeLabels decide which fleet pods (by spec.nodeSelector) run here.
	NodeLabels map[string]string
	// Out receives the updates, one call at a time, in order.
	Out func(messages.PodUpdate)
	// Recorder, optional, gets a FailedValidation event per rejected entry.
	Recorder Recorder
	// OnInvalid, optional, is told about every rejected entry.
	OnInvalid func(key string, err error)
	// Clock paces re-watch back-off; nil means the real clock.
	Clock clock.Clock
}

func (c *Config) validate() error {
	var errs []error
	if c.Conn == nil {
		errs = append(errs, errors.New("remote source config: conn is required"))
	}
	if c.NodeName == "" {
		errs = append(errs, errors.New("remote source config: nodeName is required"))
	}
	if c.Out == nil {
		errs = append(errs, errors.New("remote source config: out is required"))
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return errors.Join(errs...)
}
