package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go/micro"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/actorlet/actorlet/messages/wire"
)

// PlacementSetter is implemented by nodes that can change their labels
// and taints at run time.
type PlacementSetter interface {
	SetPlacement(ctx context.Context, labels map[string]string, taints []v1.Taint) error
}

func (s *Service) placement(ctx context.Context, req micro.Request) (any, error) {
	// Strict: the request replaces the node's labels and taints, so a body
	// with other fields (a request meant for another verb) must not clear
	// them.
	var r wire.PlacementRequest
	if len(req.Data()) == 0 {
		return nil, wire.BadRequest("body", "empty request")
	}
	dec := json.NewDecoder(bytes.NewReader(req.Data()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, wire.BadRequest("body", err.Error())
	}
	setter, ok := s.node.(PlacementSetter)
	if !ok {
		return nil, &wire.Error{Code: 501, Description: "this node cannot change its labels or taints"}
	}
	if len(r.Labels) > wire.MaxPlacementLabels {
		return nil, wire.BadRequest("labels", fmt.Sprintf("%d labels: at most %d", len(r.Labels), wire.MaxPlacementLabels))
	}
	if len(r.Taints) > wire.MaxPlacementTaints {
		return nil, wire.BadRequest("taints", fmt.Sprintf("%d taints: at most %d", len(r.Taints), wire.MaxPlacementTaints))
	}
	for k, v := range r.Labels {
		if msgs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...); len(msgs) > 0 {
			return nil, wire.BadRequest("labels["+k+"]", msgs[0])
		}
	}
	for i, t := range r.Taints {
		switch t.Effect {
		case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
		default:
			return nil, wire.BadRequest(fmt.Sprintf("taints[%d].effect", i), "must be NoSchedule, PreferNoSchedule or NoExecute")
		}
		if msgs := append(validation.IsQualifiedName(t.Key), validation.IsValidLabelValue(t.Value)...); len(msgs) > 0 {
			return nil, wire.BadRequest(fmt.Sprintf("taints[%d]", i), msgs[0])
		}
	}
	if err := setter.SetPlacement(ctx, r.Labels, r.Taints); err != nil {
		return nil, fmt.Errorf("set placement: %w", err)
	}
	return wire.Ack{Message: fmt.Sprintf("node labels (%d) and taints (%d) set", len(r.Labels), len(r.Taints))}, nil
}
