package probe

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/actorlet/actorlet/messages"
	v1 "k8s.io/api/core/v1"
)

// TCPSocket runs a tcpSocket probe: Success when a TCP connection to host
// (the pod IP when empty) and port opens within timeout.
func TCPSocket(ctx context.Context, action *v1.TCPSocketAction, podIP string, container *v1.Container, timeout time.Duration) (messages.ProbeResult, string, error) {
	if action == nil {
		return messages.ProbeUnknown, "", fmt.Errorf("tcpSocket: must be set")
	}
	host := action.Host
	if host == "" {
		host = podIP
	}
	if host == "" {
		return messages.ProbeUnknown, "", fmt.Errorf("tcpSocket.host: empty and the pod has no IP yet")
	}
	port, err := ResolvePort(action.Port, container)
	if err != nil {
		return messages.ProbeUnknown, "", fmt.Errorf("tcpSocket.%w", err)
	}
	return DialTCP(ctx, net.JoinHostPort(host, strconv.Itoa(port)), timeout)
}

// DialTCP reports whether a TCP connection to addr opens within timeout.
func DialTCP(ctx context.Context, addr string, timeout time.Duration) (messages.ProbeResult, string, error) {
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return messages.ProbeFailure, err.Error(), nil
	}
	_ = conn.Close()
	return messages.ProbeSuccess, "", nil
}
