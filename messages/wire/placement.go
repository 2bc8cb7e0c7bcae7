package wire

import (
	"context"

	v1 "k8s.io/api/core/v1"
)

// VerbPlacement replaces the node's labels and taints at run time (what
// `actorletctl label node` / `taint node` send): fleet pods are placed
// again (see sources/remote/placement.go).
const VerbPlacement = "node.placement"

// Limits of a placement request.
const (
	MaxPlacementLabels = 256
	MaxPlacementTaints = 64
)

// PlacementRequest carries the node's complete new labels (besides the
// well-known hostname/os/arch ones) and taints.
type PlacementRequest struct {
	Labels map[string]string `json:"labels,omitempty"`
	Taints []v1.Taint        `json:"taints,omitempty"`
}

// SetPlacement replaces a node's labels and taints.
func (c *Client) SetPlacement(ctx context.Context, node string, r PlacementRequest) (string, error) {
	var resp Ack
	err := c.Call(ctx, node, VerbPlacement, c.timeout(), r, &resp)
	return resp.Message, err
}
