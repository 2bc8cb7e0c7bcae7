package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// StreamingService is the part of the CRI RuntimeService that prepares
// interactive streams. Each call returns the URL of a one-time session on
// the runtime's streaming server (k8s.io/cri-streaming), which the caller
// then dials with the remotecommand (exec, attach) or port-forward protocol.
type StreamingService interface {
	Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error)
	Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error)
	PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error)
}

var _ StreamingService = &Client{}

// Exec prepares a streaming exec in a container and returns its URL.
func (c *Client) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	return unary(ctx, c.timeout, c.rt.Exec, req, "Exec %v in %q", req.GetCmd(), req.GetContainerId())
}

// Attach prepares a streaming attach to a container and returns its URL.
func (c *Client) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	return unary(ctx, c.timeout, c.rt.Attach, req, "Attach %q", req.GetContainerId())
}

// PortForward prepares a port-forward into a sandbox and returns its URL.
func (c *Client) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	return unary(ctx, c.timeout, c.rt.PortForward, req, "PortForward %v of %q", req.GetPort(), req.GetPodSandboxId())
}
