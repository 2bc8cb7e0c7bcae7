package cri

import (
	"context"
	"fmt"

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
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	if _, err := c.rt.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: containerID}); err != nil {
		return fmt.Errorf("ReopenContainerLog %q: %w", containerID, err)
	}
	return nil
}
