package cri_test

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
)

// fakeServer is a minimal CRI runtime: Version answers, StartContainer and
// ExecSync answer what the test put in, everything else is Unimplemented.
type fakeServer struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	startErr error
	exec     *runtimeapi.ExecSyncResponse
}

func (f *fakeServer) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: "fake", RuntimeApiVersion: "v1"}, nil
}

func (f *fakeServer) StartContainer(context.Context, *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	return &runtimeapi.StartContainerResponse{}, f.startErr
}

func (f *fakeServer) ExecSync(context.Context, *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	return f.exec, nil
}

// serve starts a gRPC server on a socket in a temp dir; register may be nil
// for a server that serves nothing (not CRI v1).
func serve(t *testing.T, register func(*grpc.Server)) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "cri.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	if register != nil {
		register(s)
	}
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return sock
}

func dial(t *testing.T, endpoint string) *cri.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := cri.Dial(ctx, endpoint)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestErrorsKeepGRPCCodeThroughWrapping(t *testing.T) {
	f := &fakeServer{}
	sock := serve(t, func(s *grpc.Server) { runtimeapi.RegisterRuntimeServiceServer(s, f) })
	c := dial(t, "unix://"+sock)
	if got, want := c.Endpoint(), "unix://"+sock; got != want {
		t.Errorf("Endpoint() = %q, want %q", got, want)
	}

	tests := []struct {
		name  string
		err   error
		code  codes.Code
		check func(error) bool
	}{
		{"not found", status.Error(codes.NotFound, "no such container"), codes.NotFound, cri.IsNotFound},
		{"unavailable", status.Error(codes.Unavailable, "down"), codes.Unavailable, cri.IsUnavailable},
		{"deadline", status.Error(codes.DeadlineExceeded, "slow"), codes.DeadlineExceeded, cri.IsDeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.startErr = tt.err
			err := c.StartContainer(context.Background(), "abc")
			if err == nil {
				t.Fatal("StartContainer succeeded, want an error")
			}
			if !strings.Contains(err.Error(), `StartContainer "abc"`) {
				t.Errorf("error %q does not name the verb and ID", err)
			}
			if got := status.Code(err); got != tt.code {
				t.Errorf("status.Code = %v, want %v", got, tt.code)
			}
			if !tt.check(err) {
				t.Errorf("helper does not recognise %v", err)
			}
		})
	}

	// A verb the server does not implement.
	_, err := c.ContainerStatus(context.Background(), "abc", false)
	if !cri.IsUnimplemented(err) || cri.IsNotFound(err) {
		t.Errorf("ContainerStatus on a server without it: %v, want Unimplemented", err)
	}
	if cri.IsNotFound(nil) || cri.IsUnimplemented(errors.New("plain")) {
		t.Error("helpers must be false for nil and non-gRPC errors")
	}
}

func TestExecSyncExitError(t *testing.T) {
	f := &fakeServer{exec: &runtimeapi.ExecSyncResponse{Stdout: []byte("out"), Stderr: []byte("err"), ExitCode: 7}}
	sock := serve(t, func(s *grpc.Server) { runtimeapi.RegisterRuntimeServiceServer(s, f) })
	c := dial(t, sock)
	stdout, stderr, err := c.ExecSync(context.Background(), "abc", []string{"false"}, time.Second)
	var exitErr *cri.ExitError
	if !errors.As(err, &exitErr) || exitErr.Code != 7 {
		t.Fatalf("ExecSync error = %v, want ExitError code 7", err)
	}
	if !strings.Contains(exitErr.Error(), "7") {
		t.Errorf("ExitError %q does not mention the code", exitErr)
	}
	if string(stdout) != "out" || string(stderr) != "err" {
		t.Errorf("output = %q, %q", stdout, stderr)
	}
}

func TestDialNothingListeningFailsWithinDeadline(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "absent.sock")
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := cri.Dial(ctx, "unix://"+sock)
	if err == nil {
		t.Fatal("Dial succeeded with nothing listening")
	}
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("Dial took %v, want it bounded by the 500ms deadline", elapsed)
	}
	if !strings.Contains(err.Error(), sock) {
		t.Errorf("error %q does not name the endpoint", err)
	}
	t.Logf("Dial error: %v", err)
}

func TestDialRuntimeWithoutV1(t *testing.T) {
	sock := serve(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := cri.Dial(ctx, sock)
	if err == nil || !strings.Contains(err.Error(), "does not serve the CRI v1 API") {
		t.Fatalf("Dial = %v, want a clear not-v1 error", err)
	}
	if !cri.IsUnimplemented(err) {
		t.Errorf("error %v lost its Unimplemented code", err)
	}
}

func TestSocketPath(t *testing.T) {
	tests := []struct {
		endpoint, want string
		wantErr        bool
	}{
		{"unix:///run/containerd/containerd.sock", "/run/containerd/containerd.sock", false},
		{"/tmp/x.sock", "/tmp/x.sock", false},
		{"relative.sock", "relative.sock", false},
		{"", "", true},
		{"unix://", "", true},
		{"tcp://127.0.0.1:1234", "", true},
	}
	for _, tt := range tests {
		got, err := cri.SocketPath(tt.endpoint)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("SocketPath(%q) = %q, %v; want %q, err=%v", tt.endpoint, got, err, tt.want, tt.wantErr)
		}
	}
}

// Every unary call is counted by method, failed ones included: the count is
// of calls the runtime had to answer.
func TestCallCountsByMethod(t *testing.T) {
	f := &fakeServer{}
	sock := serve(t, func(s *grpc.Server) { runtimeapi.RegisterRuntimeServiceServer(s, f) })
	c := dial(t, sock) // Dial's own Version call counts
	for i := 0; i < 3; i++ {
		if err := c.StartContainer(context.Background(), "abc"); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = c.ContainerStatus(context.Background(), "abc", false) // Unimplemented
	got := c.CallCounts()
	want := map[string]uint64{"Version": 1, "StartContainer": 3, "ContainerStatus": 1}
	if len(got) != len(want) {
		t.Errorf("CallCounts() = %v, want %v", got, want)
	}
	for m, n := range want {
		if got[m] != n {
			t.Errorf("CallCounts()[%q] = %d, want %d", m, got[m], n)
		}
	}
}
