package cri

import (
	"context"
	"fmt"

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
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	resp, err := c.rt.Exec(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("Exec %v in %q: %w", req.GetCmd(), req.GetContainerId(), err)
	}
	return resp, nil
}

// Attach prepares a streaming attach to a container and returns its URL.
func (c *Client) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	resp, err := c.rt.Attach(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("Attach %q: %w", req.GetContainerId(), err)
	}
	return resp, nil
}

// PortForward prepares a port-forward into a sandbox and returns its URL.
func (c *Client) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	resp, err := c.rt.PortForward(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("PortForward %v of %q: %w", req.GetPort(), req.GetPodSandboxId(), err)
	}
	return resp, nil
}
