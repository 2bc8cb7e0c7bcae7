package probe

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/test/testutil"
)

func TestTCPSocket(t *testing.T) {
	open := testutil.ServeTCP(t, nil)
	closed := freePort(t)
	container := &v1.Container{Ports: []v1.ContainerPort{{Name: "svc", ContainerPort: int32(open)}}}

	tests := []struct {
		name    string
		action  *v1.TCPSocketAction
		podIP   string
		wantRes messages.ProbeResult
		wantMsg string
		wantErr string
	}{
		{name: "open port", action: &v1.TCPSocketAction{Port: intstr.FromInt(open)}, podIP: "127.0.0.1", wantRes: messages.ProbeSuccess},
		{name: "named port with explicit host", action: &v1.TCPSocketAction{Host: "127.0.0.1", Port: intstr.FromString("svc")}, wantRes: messages.ProbeSuccess},
		{name: "closed port", action: &v1.TCPSocketAction{Port: intstr.FromInt(closed)}, podIP: "127.0.0.1", wantRes: messages.ProbeFailure, wantMsg: "connection refused"},
		{name: "no host", action: &v1.TCPSocketAction{Port: intstr.FromInt(open)}, wantRes: messages.ProbeUnknown, wantErr: "tcpSocket.host"},
		{name: "zero port", action: &v1.TCPSocketAction{Port: intstr.FromInt(0)}, podIP: "127.0.0.1", wantRes: messages.ProbeUnknown, wantErr: "tcpSocket.port: 0 is out of range"},
		{name: "nil action", wantRes: messages.ProbeUnknown, wantErr: "tcpSocket: must be set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, msg, err := TCPSocket(context.Background(), tt.action, tt.podIP, container, time.Second)
			checkResult(t, res, msg, err, tt.wantRes, tt.wantMsg, tt.wantErr)
		})
	}
}
