package kuberuntime

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/actorlet/actorlet/messages/validation"
)

// refuseEphemeral (pods are refused at admission for what the runtime
// cannot run; an ephemeral container arrives with an update, after
// admission) says whether the ephemeral container c (index i) is one
// the runtime cannot run. Then it is not created: it waits with reason
// RuntimeUnsupported and the field's message, and a Warning event says so
// once. It is checked again at every sync (no runtime call, no back-off),
// as an ephemeral container is never restarted nor changed.
func (m *Manager) refuseEphemeral(ctx context.Context, pod *v1.Pod, c *v1.Container, i int) bool {
	if m.runtimeNameFor(ctx) != validation.ProcessRuntimeName {
		return false
	}
	errs := validation.ProcessRuntimeContainerErrors(c, field.NewPath("spec", "ephemeralContainers").Index(i), validation.LookPath)
	if len(errs) == 0 {
		return false
	}
	msg := errs.ToAggregate().Error()
	if r, ok := m.reasons.get(pod.UID, c.Name); !ok || r.reason != validation.ReasonRuntimeUnsupported {
		m.event(pod, v1.EventTypeWarning, "Failed", "Error: ephemeral container %s cannot run on the process runtime: %s", c.Name, msg)
	}
	m.reasons.set(pod.UID, c.Name, validation.ReasonRuntimeUnsupported, msg)
	return true
}
