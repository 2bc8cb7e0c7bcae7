package prober

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/test/testutil"
)

func TestNewProbeSpec(t *testing.T) {
	exec := v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}
	tests := []struct {
		name    string
		kind    messages.ProbeKind
		probe   *v1.Probe
		want    probeSpec
		wantErr string
	}{
		{
			name: "defaults", kind: messages.Liveness, probe: &v1.Probe{ProbeHandler: exec},
			want: probeSpec{handler: exec, period: 10 * time.Second, timeout: time.Second, successThreshold: 1, failureThreshold: 3},
		},
		{
			name: "explicit values", kind: messages.Readiness,
			probe: &v1.Probe{ProbeHandler: exec, InitialDelaySeconds: 5, PeriodSeconds: 1, TimeoutSeconds: 2, SuccessThreshold: 2, FailureThreshold: 4},
			want:  probeSpec{handler: exec, initialDelay: 5 * time.Second, period: time.Second, timeout: 2 * time.Second, successThreshold: 2, failureThreshold: 4},
		},
		{name: "liveness success threshold must be 1", kind: messages.Liveness, probe: &v1.Probe{ProbeHandler: exec, SuccessThreshold: 2}, wantErr: "livenessProbe.successThreshold: must be 1 for liveness probes, got 2"},
		{name: "startup success threshold must be 1", kind: messages.Startup, probe: &v1.Probe{ProbeHandler: exec, SuccessThreshold: 3}, wantErr: "startupProbe.successThreshold: must be 1"},
		{name: "negative period", kind: messages.Readiness, probe: &v1.Probe{ProbeHandler: exec, PeriodSeconds: -1}, wantErr: "readinessProbe.periodSeconds: must not be negative"},
		{name: "negative delay", kind: messages.Readiness, probe: &v1.Probe{ProbeHandler: exec, InitialDelaySeconds: -1}, wantErr: "initialDelaySeconds"},
		{name: "no handler", kind: messages.Readiness, probe: &v1.Probe{}, wantErr: "exactly one of exec, httpGet, tcpSocket, grpc must be set, got 0"},
		{name: "nil", kind: messages.Startup, wantErr: "startupProbe: must be set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := newProbeSpec(tt.kind, tt.probe)
			if testutil.WantError(t, err, tt.wantErr) {
				return
			}
			if got.period != tt.want.period || got.timeout != tt.want.timeout || got.initialDelay != tt.want.initialDelay ||
				got.successThreshold != tt.want.successThreshold || got.failureThreshold != tt.want.failureThreshold || got.handler.Exec == nil {
				t.Fatalf("spec = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestInitialResults(t *testing.T) {
	for kind, want := range map[messages.ProbeKind]messages.ProbeResult{
		messages.Readiness: messages.ProbeFailure,
		messages.Liveness:  messages.ProbeSuccess,
		messages.Startup:   messages.ProbeUnknown,
	} {
		if got := initialResult(kind); got != want {
			t.Errorf("initialResult(%s) = %v, want %v", kind, got, want)
		}
	}
}

func TestRuntimeID(t *testing.T) {
	for in, want := range map[string]string{"containerd://abc": "abc", "abc": "abc", "": ""} {
		if got := runtimeID(in); got != want {
			t.Errorf("runtimeID(%q) = %q, want %q", in, got, want)
		}
	}
}
