package commands

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/messages/wire"
)

// streamNode is a fakeNode that streams through commandstest.HostStreams.
type streamNode struct {
	*fakeNode
	rt StreamingRuntime
}

func (n *streamNode) PrepareStream(ctx context.Context, verb string, r *wire.SessionRequest) (StreamFunc, error) {
	p, err := n.find(r.Namespace, r.Name)
	if err != nil {
		return nil, err
	}
	return PrepareStreamFor(ctx, n.rt, p, verb, r)
}

func streamPod() *v1.Pod {
	p := testPod("default", "web", "u1", "app")
	p.Spec.Containers[0].Stdin = true
	p.Spec.Containers[0].TTY = true
	return p
}
