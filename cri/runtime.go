// Package cri is actorlet's door to a container runtime. Everything the agent
// does to containers goes through the narrow Runtime interface defined here,
// which is the subset of the CRI v1 verbs the agent uses. Its method
// signatures match k8s.io/cri-api/pkg/apis, so the upstream testing fakes
// (k8s.io/cri-api/pkg/apis/testing) satisfy it for error-injection tests.
//
// Implementations:
//   - Client (client.go): a gRPC client for CRI v1 on a unix socket
//     (containerd, CRI-O, or actorlet's embedded process runtime).
//
// Subpackages:
//   - kuberuntime: the runtime manager (v1.Pod → CRI calls, pod status).
//   - procruntime: the embedded process runtime, a CRI server that runs each
//     container as a host process.
package cri

import (
	"context"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RuntimeService is the subset of the CRI RuntimeService actorlet uses.
type RuntimeService interface {
	Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error)
	Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error)

	RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error)
	StopPodSandbox(ctx context.Context, podSandboxID string) error
	RemovePodSandbox(ctx context.Context, podSandboxID string) error
	PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error)
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)

	CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
	StartContainer(ctx context.Context, containerID string) error
	// StopContainer stops a container, sending SIGKILL after timeout seconds.
	// Stopping an already exited container is not an error.
	StopContainer(ctx context.Context, containerID string, timeout int64) error
	RemoveContainer(ctx context.Context, containerID string) error
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
	// ExecSync runs cmd in the container. A command that ran and exited
	// non-zero returns its output and an *ExitError carrying the code.
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout []byte, stderr []byte, err error)
	// GetContainerEvents streams container events into ch until ctx ends or
	// the stream fails. Runtimes without the feature (containerd 1.6) answer
	// codes.Unimplemented: see IsUnimplemented.
	GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, connectionEstablishedCallback func(runtimeapi.RuntimeService_GetContainerEventsClient)) error
}

// ImageService is the subset of the CRI ImageService actorlet uses.
type ImageService interface {
	PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, podSandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
	ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error)
	ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
	RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error
}

// Runtime is both services, as one runtime endpoint serves them.
type Runtime interface {
	RuntimeService
	ImageService
}
