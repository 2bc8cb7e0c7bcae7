package prober

import (
	"fmt"
	"time"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/seconds"

	"github.com/actorlet/actorlet/messages/podrules"
	v1 "k8s.io/api/core/v1"
)

// Probe defaults (podrules), as durations and counts.
const (
	defaultPeriod           = time.Duration(podrules.DefaultProbePeriodSeconds) * time.Second
	defaultTimeout          = time.Duration(podrules.DefaultProbeTimeoutSeconds) * time.Second
	defaultSuccessThreshold = int(podrules.DefaultProbeSuccessThreshold)
	defaultFailureThreshold = int(podrules.DefaultProbeFailureThreshold)
)

// probeSpec is a validated probe with defaults applied.
type probeSpec struct {
	handler          v1.ProbeHandler
	initialDelay     time.Duration
	period           time.Duration
	timeout          time.Duration
	successThreshold int
	failureThreshold int
}

// newProbeSpec validates p for kind and fills in the defaults: period 10 s
// (at least 1 s), timeout 1 s, success threshold 1 (exactly 1 for liveness
// and startup), failure threshold 3, initial delay 0.
func newProbeSpec(kind messages.ProbeKind, p *v1.Probe) (probeSpec, error) {
	if p == nil {
		return probeSpec{}, fmt.Errorf("%sProbe: must be set", kind)
	}
	set := 0
	for _, ok := range []bool{p.Exec != nil, p.HTTPGet != nil, p.TCPSocket != nil, p.GRPC != nil} {
		if ok {
			set++
		}
	}
	if set != 1 {
		return probeSpec{}, fmt.Errorf("%sProbe: exactly one of exec, httpGet, tcpSocket, grpc must be set, got %d", kind, set)
	}
	s := probeSpec{
		handler:          p.ProbeHandler,
		initialDelay:     seconds.Duration(p.InitialDelaySeconds),
		period:           seconds.Duration(p.PeriodSeconds),
		timeout:          seconds.Duration(p.TimeoutSeconds),
		successThreshold: int(p.SuccessThreshold),
		failureThreshold: int(p.FailureThreshold),
	}
	switch {
	case p.InitialDelaySeconds < 0:
		return probeSpec{}, fmt.Errorf("%sProbe.initialDelaySeconds: must not be negative, got %d", kind, p.InitialDelaySeconds)
	case p.PeriodSeconds < 0:
		return probeSpec{}, fmt.Errorf("%sProbe.periodSeconds: must not be negative, got %d", kind, p.PeriodSeconds)
	case p.TimeoutSeconds < 0:
		return probeSpec{}, fmt.Errorf("%sProbe.timeoutSeconds: must not be negative, got %d", kind, p.TimeoutSeconds)
	case p.SuccessThreshold < 0:
		return probeSpec{}, fmt.Errorf("%sProbe.successThreshold: must not be negative, got %d", kind, p.SuccessThreshold)
	case p.FailureThreshold < 0:
		return probeSpec{}, fmt.Errorf("%sProbe.failureThreshold: must not be negative, got %d", kind, p.FailureThreshold)
	}
	if s.period == 0 {
		s.period = defaultPeriod
	}
	if s.timeout == 0 {
		s.timeout = defaultTimeout
	}
	if s.successThreshold == 0 {
		s.successThreshold = defaultSuccessThreshold
	}
	if s.failureThreshold == 0 {
		s.failureThreshold = defaultFailureThreshold
	}
	if kind != messages.Readiness && s.successThreshold != 1 {
		return probeSpec{}, fmt.Errorf("%sProbe.successThreshold: must be 1 for %s probes, got %d", kind, kind, s.successThreshold)
	}
	return s, nil
}

// initialResult is what a probe reports for a new container before it ran.
func initialResult(kind messages.ProbeKind) messages.ProbeResult {
	switch kind {
	case messages.Readiness:
		return messages.ProbeFailure
	case messages.Liveness:
		return messages.ProbeSuccess
	}
	return messages.ProbeUnknown
}

// declaredProbes returns the probes a container declares, by kind.
func declaredProbes(c *v1.Container) map[messages.ProbeKind]*v1.Probe {
	out := map[messages.ProbeKind]*v1.Probe{}
	if c.LivenessProbe != nil {
		out[messages.Liveness] = c.LivenessProbe
	}
	if c.ReadinessProbe != nil {
		out[messages.Readiness] = c.ReadinessProbe
	}
	if c.StartupProbe != nil {
		out[messages.Startup] = c.StartupProbe
	}
	return out
}
