package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// LogReopener is the CRI call log rotation needs: after the current log
// file was renamed, the runtime reopens (creates) the file at the
// container's log path.
type LogReopener interface {
	ReopenContainerLog(ctx context.Context, containerID string) error
}

var _ LogReopener = &Client{}

// ReopenContainerLog asks the runtime to reopen the container's log file.
func (c *Client) ReopenContainerLog(ctx context.Context, containerID string) error {
	_, err := unary(ctx, c.timeout, c.rt.ReopenContainerLog, &runtimeapi.ReopenContainerLogRequest{ContainerId: containerID}, "ReopenContainerLog %q", containerID)
	return err
}
