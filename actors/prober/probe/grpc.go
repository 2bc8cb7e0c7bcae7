package probe

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/actorlet/actorlet/messages"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
)

// GRPC runs a grpc probe: a grpc.health.v1.Health/Check for the service
// (empty: the server as a whole) on the pod IP and port, without TLS.
// SERVING is Success; any other status, an error or a timeout is Failure.
func GRPC(ctx context.Context, action *v1.GRPCAction, podIP string, timeout time.Duration) (messages.ProbeResult, string, error) {
	if action == nil {
		return messages.ProbeUnknown, "", fmt.Errorf("grpc: must be set")
	}
	if action.Port < 1 || action.Port > 65535 {
		return messages.ProbeUnknown, "", fmt.Errorf("grpc.port: %d is out of range 1-65535", action.Port)
	}
	if podIP == "" {
		return messages.ProbeUnknown, "", fmt.Errorf("grpc: the pod has no IP yet")
	}
	service := ""
	if action.Service != nil {
		service = *action.Service
	}
	return CheckHealth(ctx, net.JoinHostPort(podIP, strconv.Itoa(int(action.Port))), service, timeout)
}

// CheckHealth asks the gRPC health service at addr about service.
func CheckHealth(ctx context.Context, addr, service string, timeout time.Duration) (messages.ProbeResult, string, error) {
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUserAgent(UserAgent),
	)
	if err != nil {
		return messages.ProbeUnknown, "", fmt.Errorf("grpc probe: create client for %s: %w", addr, err)
	}
	defer func() { _ = conn.Close() }()

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		switch status.Code(err) {
		case codes.Unimplemented:
			return messages.ProbeFailure, fmt.Sprintf("this server does not implement the grpc health protocol (grpc.health.v1.Health): %v", status.Convert(err).Message()), nil
		case codes.DeadlineExceeded:
			return messages.ProbeFailure, fmt.Sprintf("timeout: health rpc did not complete within %v", timeout), nil
		}
		return messages.ProbeFailure, fmt.Sprintf("error: health rpc probe failed: %v", err), nil
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return messages.ProbeFailure, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String()), nil
	}
	return messages.ProbeSuccess, "", nil
}
