package probe

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/actorlet/actorlet/messages"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	v1 "k8s.io/api/core/v1"
)

// startGRPC serves on 127.0.0.1; with health it registers the health
// service and returns it for toggling.
func startGRPC(t *testing.T, withHealth bool) (*health.Server, int32) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	srv := grpc.NewServer()
	var hs *health.Server
	if withHealth {
		hs = health.NewServer()
		healthpb.RegisterHealthServer(srv, hs)
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return hs, int32(l.Addr().(*net.TCPAddr).Port)
}

func TestGRPC(t *testing.T) {
	hs, port := startGRPC(t, true)
	_, bare := startGRPC(t, false)
	closed := int32(freePort(t))
	svc := "db"
	probeSvc := func(p int32, service *string) (messages.ProbeResult, string, error) {
		return GRPC(context.Background(), &v1.GRPCAction{Port: p, Service: service}, "127.0.0.1", 2*time.Second)
	}

	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus(svc, healthpb.HealthCheckResponse_NOT_SERVING)
	res, msg, err := probeSvc(port, nil)
	checkResult(t, res, msg, err, messages.ProbeSuccess, "", "")
	res, msg, err = probeSvc(port, &svc)
	checkResult(t, res, msg, err, messages.ProbeFailure, `service unhealthy (responded with "NOT_SERVING")`, "")

	hs.SetServingStatus(svc, healthpb.HealthCheckResponse_SERVING)
	res, msg, err = probeSvc(port, &svc)
	checkResult(t, res, msg, err, messages.ProbeSuccess, "", "")

	unknown := "nope"
	res, msg, err = probeSvc(port, &unknown)
	checkResult(t, res, msg, err, messages.ProbeFailure, "health rpc probe failed", "")

	res, msg, err = probeSvc(bare, nil)
	checkResult(t, res, msg, err, messages.ProbeFailure, "does not implement the grpc health protocol", "")

	res, msg, err = probeSvc(closed, nil)
	checkResult(t, res, msg, err, messages.ProbeFailure, "health rpc probe failed", "")

	res, msg, err = probeSvc(0, nil)
	checkResult(t, res, msg, err, messages.ProbeUnknown, "", "grpc.port: 0 is out of range")
}
