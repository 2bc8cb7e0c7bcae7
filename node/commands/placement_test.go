package commands

import (
	"context"
	"fmt"
	"github.com/actorlet/actorlet/messages/wire"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// placementNode is a fakeNode that can change its labels and taints.
type placementNode struct {
	fakeNode
	mu     sync.Mutex
	labels map[string]string
	taints []v1.Taint
}

func (p *placementNode) SetPlacement(_ context.Context, labels map[string]string, taints []v1.Taint) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.labels, p.taints = labels, taints
	return nil
}

// The placement verb hands valid labels and taints to the node and
// refuses hostile ones (bad effect, bad key, too many) with a 400 naming
// the field; a node without the ability answers 501.
func TestPlacementVerb(t *testing.T) {
	nc := runNATS(t)
	node := &placementNode{}
	startService(t, nc, node, ServiceOptions{NodeName: "n1"})
	c := &wire.Client{NC: nc, Timeout: 5 * time.Second}
	ctx := context.Background()
	if _, err := c.SetPlacement(ctx, "n1", wire.PlacementRequest{Labels: map[string]string{"zone": "a"}, Taints: []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoExecute}}}); err != nil {
		t.Fatal(err)
	}
	node.mu.Lock()
	if node.labels["zone"] != "a" || len(node.taints) != 1 {
		t.Errorf("node got %v %v", node.labels, node.taints)
	}
	node.mu.Unlock()
	many := map[string]string{}
	for i := range wire.MaxPlacementLabels + 1 {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	for _, bad := range []wire.PlacementRequest{
		{Taints: []v1.Taint{{Key: "k", Effect: "Sometimes"}}},
		{Labels: map[string]string{"bad key": "v"}},
		{Labels: many},
	} {
		if _, err := c.SetPlacement(ctx, "n1", bad); err == nil || !strings.Contains(err.Error(), "(400)") {
			t.Errorf("request %v: %v, want a 400", bad.Taints, err)
		}
	}

	nc2 := runNATS(t)
	startService(t, nc2, &fakeNode{}, ServiceOptions{NodeName: "n2"})
	c2 := &wire.Client{NC: nc2, Timeout: 5 * time.Second}
	if _, err := c2.SetPlacement(ctx, "n2", wire.PlacementRequest{}); err == nil || !strings.Contains(err.Error(), "(501)") {
		t.Errorf("node without placement: %v, want 501", err)
	}
}
