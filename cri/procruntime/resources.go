package procruntime

import (
	"context"
	"path/filepath"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// resourcesFile keeps the resources set by UpdateContainerResources.
const resourcesFile = "resources.json"

// UpdateContainerResources records the container's new resources (shown
// in ContainerStatus) and applies them to its cgroup when it has one
// (isolation.go); without a cgroup they are accounted only, as at
// creation.
func (r *Runtime) UpdateContainerResources(ctx context.Context, req *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	res := req.GetLinux()
	if res == nil {
		return nil, status.Error(codes.InvalidArgument, "linux: must be set (the process runtime runs Linux processes)")
	}
	if res.GetCpuShares() < 0 || res.GetCpuQuota() < -1 || res.GetCpuPeriod() < 0 || res.GetMemoryLimitInBytes() < 0 {
		return nil, status.Error(codes.InvalidArgument, "linux: negative cpu_shares, cpu_period, memory_limit_in_bytes or cpu_quota below -1")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := lookup(r.containers, "container", req.GetContainerId())
	if err != nil {
		return nil, err
	}
	if c.state() == runtimeapi.ContainerState_CONTAINER_EXITED {
		return nil, status.Errorf(codes.FailedPrecondition, "update container %q: container is EXITED", c.rec.ID)
	}
	if err := r.applyResources(c.rec.ID, res); err != nil {
		return nil, status.Errorf(codes.Internal, "update container %q: %v", c.rec.ID, err)
	}
	if err := writeProto(filepath.Join(r.containerDir(c.rec.ID), resourcesFile), res); err != nil {
		return nil, status.Errorf(codes.Internal, "update container %q: %v", c.rec.ID, err)
	}
	c.resources = res
	return &runtimeapi.UpdateContainerResourcesResponse{}, nil
}

// resourcesOf is the container's current resources: the last update, or
// the config's.
func resourcesOf(c *container) *runtimeapi.ContainerResources {
	res := c.resources
	if res == nil {
		res = c.config.GetLinux().GetResources()
	}
	if res == nil {
		return nil
	}
	return &runtimeapi.ContainerResources{Linux: res}
}

// loadResources reads a container's updated resources, if any.
func (r *Runtime) loadResources(c *container) {
	res := &runtimeapi.LinuxContainerResources{}
	if err := readProto(filepath.Join(r.containerDir(c.rec.ID), resourcesFile), res); err == nil {
		c.resources = res
	}
}
