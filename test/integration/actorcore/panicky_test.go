package actorcore

import (
	"context"
	"fmt"
	"sync/atomic"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
)

// panickyRuntime is the agent's runtime with one planted bug: once armed,
// the next CreateContainer of one container of one pod panics, once. Only
// pod actors create containers, so the panic happens in a pod actor's work.
type panickyRuntime struct {
	cri.Runtime
	pod, container string
	armed          atomic.Bool
	fired          atomic.Bool
}

var _ cri.Runtime = &panickyRuntime{}

// arm makes the next matching CreateContainer panic.
func (r *panickyRuntime) arm() { r.armed.Store(true) }

func (r *panickyRuntime) CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	if r.armed.Load() && sandboxConfig.GetMetadata().GetName() == r.pod && config.GetMetadata().GetName() == r.container &&
		r.fired.CompareAndSwap(false, true) {
		panic(fmt.Sprintf("planted bug: CreateContainer of %s/%s", r.pod, r.container))
	}
	return r.Runtime.CreateContainer(ctx, podSandboxID, config, sandboxConfig)
}
