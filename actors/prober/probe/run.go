package probe

import (
	"context"
	"fmt"
	"time"

	"github.com/actorlet/actorlet/messages"
	v1 "k8s.io/api/core/v1"
)

// Target is what one probe run needs to know about its container.
type Target struct {
	Handler     v1.ProbeHandler
	Timeout     time.Duration
	PodIP       string
	Container   *v1.Container // for named ports
	ContainerID string        // for exec
	Exec        Execer
}

// Run runs the handler the probe declares. Exactly one handler must be set.
func Run(ctx context.Context, t Target) (messages.ProbeResult, string, error) {
	if t.Timeout <= 0 {
		return messages.ProbeUnknown, "", fmt.Errorf("timeoutSeconds: must be positive, got %v", t.Timeout)
	}
	h := t.Handler
	set := 0
	for _, ok := range []bool{h.Exec != nil, h.HTTPGet != nil, h.TCPSocket != nil, h.GRPC != nil} {
		if ok {
			set++
		}
	}
	if set != 1 {
		return messages.ProbeUnknown, "", fmt.Errorf("probe handler: exactly one of exec, httpGet, tcpSocket, grpc must be set, got %d", set)
	}
	switch {
	case h.Exec != nil:
		ctx, cancel := context.WithTimeout(ctx, t.Timeout)
		defer cancel()
		return Exec(ctx, t.Exec, t.ContainerID, h.Exec, t.Timeout)
	case h.HTTPGet != nil:
		return HTTPGet(ctx, h.HTTPGet, t.PodIP, t.Container, t.Timeout)
	case h.TCPSocket != nil:
		return TCPSocket(ctx, h.TCPSocket, t.PodIP, t.Container, t.Timeout)
	default:
		return GRPC(ctx, h.GRPC, t.PodIP, t.Timeout)
	}
}
