package procruntime

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// UnsupportedRPCs are the CRI v1 calls the process runtime answers with
// Unimplemented, by design (the README lists them too). Everything else in
// RuntimeService and ImageService is served. The Stream* list calls fall
// back to their unary forms in k8s.io/cri-client.
var UnsupportedRPCs = []string{
	"CheckpointContainer",       // no checkpoint/restore (CRIU) for host processes
	"CheckpointPod",             // idem
	"RestorePod",                // idem
	"ListMetricDescriptors",     // no pod metrics beyond ContainerStats / PodSandboxStats
	"ListPodSandboxMetrics",     // idem
	"StreamPodSandboxMetrics",   // idem
	"UpdatePodSandboxResources", // sandboxes have no cgroup of their own
	"StreamPodSandboxes",        // unary ListPodSandbox instead
	"StreamContainers",          // unary ListContainers instead
	"StreamContainerStats",      // unary ListContainerStats instead
	"StreamPodSandboxStats",     // unary ListPodSandboxStats instead
	"StreamImages",              // unary ListImages instead
}

func unsupported(rpc string) error {
	return status.Errorf(codes.Unimplemented, "%s: not supported by the process runtime", rpc)
}

func (r *Runtime) CheckpointContainer(context.Context, *runtimeapi.CheckpointContainerRequest) (*runtimeapi.CheckpointContainerResponse, error) {
	return nil, unsupported("CheckpointContainer")
}

func (r *Runtime) CheckpointPod(context.Context, *runtimeapi.CheckpointPodRequest) (*runtimeapi.CheckpointPodResponse, error) {
	return nil, unsupported("CheckpointPod")
}

func (r *Runtime) RestorePod(context.Context, *runtimeapi.RestorePodRequest) (*runtimeapi.RestorePodResponse, error) {
	return nil, unsupported("RestorePod")
}

func (r *Runtime) ListMetricDescriptors(context.Context, *runtimeapi.ListMetricDescriptorsRequest) (*runtimeapi.ListMetricDescriptorsResponse, error) {
	return nil, unsupported("ListMetricDescriptors")
}

func (r *Runtime) ListPodSandboxMetrics(context.Context, *runtimeapi.ListPodSandboxMetricsRequest) (*runtimeapi.ListPodSandboxMetricsResponse, error) {
	return nil, unsupported("ListPodSandboxMetrics")
}

func (r *Runtime) StreamPodSandboxMetrics(*runtimeapi.StreamPodSandboxMetricsRequest, grpc.ServerStreamingServer[runtimeapi.StreamPodSandboxMetricsResponse]) error {
	return unsupported("StreamPodSandboxMetrics")
}

func (r *Runtime) UpdatePodSandboxResources(context.Context, *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	return nil, unsupported("UpdatePodSandboxResources")
}

func (r *Runtime) StreamPodSandboxes(*runtimeapi.StreamPodSandboxesRequest, grpc.ServerStreamingServer[runtimeapi.StreamPodSandboxesResponse]) error {
	return unsupported("StreamPodSandboxes")
}

func (r *Runtime) StreamContainers(*runtimeapi.StreamContainersRequest, grpc.ServerStreamingServer[runtimeapi.StreamContainersResponse]) error {
	return unsupported("StreamContainers")
}

func (r *Runtime) StreamContainerStats(*runtimeapi.StreamContainerStatsRequest, grpc.ServerStreamingServer[runtimeapi.StreamContainerStatsResponse]) error {
	return unsupported("StreamContainerStats")
}

func (r *Runtime) StreamPodSandboxStats(*runtimeapi.StreamPodSandboxStatsRequest, grpc.ServerStreamingServer[runtimeapi.StreamPodSandboxStatsResponse]) error {
	return unsupported("StreamPodSandboxStats")
}

func (r *Runtime) StreamImages(*runtimeapi.StreamImagesRequest, grpc.ServerStreamingServer[runtimeapi.StreamImagesResponse]) error {
	return unsupported("StreamImages")
}
