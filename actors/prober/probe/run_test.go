package probe

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/actorlet/actorlet/messages"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestRunDispatches(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	port := l.Addr().(*net.TCPAddr).Port
	okExec := &fakeExec{fn: func(context.Context, string, []string, time.Duration) ([]byte, []byte, error) {
		return []byte("ran"), nil, nil
	}}
	tests := []struct {
		name    string
		handler v1.ProbeHandler
		timeout time.Duration
		wantRes messages.ProbeResult
		wantMsg string
		wantErr string
	}{
		{name: "exec", handler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, wantRes: messages.ProbeSuccess, wantMsg: "ran"},
		{name: "tcp", handler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt(port)}}, wantRes: messages.ProbeSuccess},
		{name: "none set", wantRes: messages.ProbeUnknown, wantErr: "exactly one of exec, httpGet, tcpSocket, grpc must be set, got 0"},
		{name: "two set", handler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}, GRPC: &v1.GRPCAction{Port: 1}}, wantRes: messages.ProbeUnknown, wantErr: "got 2"},
		{name: "no timeout", handler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, timeout: -1, wantRes: messages.ProbeUnknown, wantErr: "timeoutSeconds: must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			timeout := tt.timeout
			if timeout == 0 {
				timeout = time.Second
			}
			res, msg, err := Run(context.Background(), Target{
				Handler: tt.handler, Timeout: timeout, PodIP: "127.0.0.1", ContainerID: "c1", Exec: okExec,
			})
			checkResult(t, res, msg, err, tt.wantRes, tt.wantMsg, tt.wantErr)
		})
	}
}
