package pleg

import (
	"context"
	"fmt"
	"time"

	"github.com/actorlet/actorlet/messages"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// runtimeStatusDone is a finished CRI Status poll.
type runtimeStatusDone struct {
	ready   bool
	message string
}

// pollRuntimeStatus asks the runtime whether it and its network are ready.
func pollRuntimeStatus(ctx context.Context, rs interface {
	Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error)
}) runtimeStatusDone {
	resp, err := rs.Status(ctx, false)
	if err != nil {
		return runtimeStatusDone{message: fmt.Sprintf("container runtime status check failed: %v", err)}
	}
	return runtimeReadiness(resp.GetStatus())
}

// runtimeReadiness reads the RuntimeReady and NetworkReady conditions.
func runtimeReadiness(s *runtimeapi.RuntimeStatus) runtimeStatusDone {
	var runtimeReady, networkReady *runtimeapi.RuntimeCondition
	for _, c := range s.GetConditions() {
		switch c.GetType() {
		case runtimeapi.RuntimeReady:
			runtimeReady = c
		case runtimeapi.NetworkReady:
			networkReady = c
		}
	}
	switch {
	case runtimeReady == nil:
		return runtimeStatusDone{message: "container runtime did not report the RuntimeReady condition"}
	case !runtimeReady.GetStatus():
		return runtimeStatusDone{message: fmt.Sprintf("container runtime is down: reason %q, message %q", runtimeReady.GetReason(), runtimeReady.GetMessage())}
	case networkReady == nil:
		return runtimeStatusDone{message: "container runtime did not report the NetworkReady condition"}
	case !networkReady.GetStatus():
		return runtimeStatusDone{message: fmt.Sprintf("container runtime network not ready: reason %q, message %q", networkReady.GetReason(), networkReady.GetMessage())}
	}
	return runtimeStatusDone{ready: true}
}

// relistHealth says whether the last successful relist is recent enough.
func relistHealth(now, lastSuccess time.Time, threshold time.Duration) messages.RelistHealthChanged {
	elapsed := now.Sub(lastSuccess)
	if elapsed > threshold {
		return messages.RelistHealthChanged{
			Healthy:    false,
			LastRelist: lastSuccess,
			Message:    fmt.Sprintf("PLEG is not healthy: last successful relist %s ago; threshold is %s", elapsed, threshold),
		}
	}
	return messages.RelistHealthChanged{Healthy: true, LastRelist: lastSuccess}
}
