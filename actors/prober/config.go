package prober

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/actorlet/actorlet/actors/prober/probe"
	"github.com/actorlet/actorlet/messages/record"
)

// Config is what the prober manager and its workers need.
type Config struct {
	// Exec runs exec probes in containers (cri.RuntimeService's ExecSync).
	// Without it exec probes report an error.
	Exec probe.Execer
	// Clock drives probe periods and initial delays; the real clock when nil.
	Clock clock.WithTicker
	// Recorder, optional, receives Unhealthy and ProbeWarning events.
	Recorder record.EventRecorder
	// Redact, optional, removes the Secret values pod can hold from a
	// probe's output and error before they reach an event, a log line or
	// the status (kuberuntime.Manager.Redact). It must not block.
	Redact func(pod *v1.Pod, s string) string
}

func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return c
}

// Props returns the props of the prober manager. Spawn it as a child of the
// actor that should receive ProbeResultChanged (the supervisor). Every
// field of cfg is optional, so the error is always nil; it is there as for
// every actor's Props.
func Props(cfg Config) (*actor.Props, error) {
	cfg = cfg.withDefaults()
	return actor.PropsFromProducer(func() actor.Actor { return newManager(cfg) }), nil
}

// workerSupervisor restarts a worker that panicked, a few times a minute;
// the manager's next PodStatusComputed gives it its container again.
func workerSupervisor() actor.SupervisorStrategy {
	return actor.NewOneForOneStrategy(10, time.Minute, actor.DefaultDecider)
}

// Event reasons, as the kubelet names them.
const (
	ReasonUnhealthy    = "Unhealthy"
	ReasonProbeWarning = "ProbeWarning"
)
