package memcri

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/cri/kuberuntime"
)

// Container and image verbs of Runtime.

func (r *Runtime) CreateContainer(_ context.Context, sandboxID string, config *runtimeapi.ContainerConfig, _ *runtimeapi.PodSandboxConfig) (string, error) {
	id, err := r.newID("ct", "container", config.GetMetadata() != nil)
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sandboxes[sandboxID] == nil {
		return "", notFound("sandbox", sandboxID)
	}
	r.containers[id] = &memContainer{sandboxID: sandboxID, meta: config.Metadata, image: config.Image,
		labels: config.Labels, annots: config.Annotations,
		state: runtimeapi.ContainerState_CONTAINER_CREATED, createdAt: time.Now().UnixNano()}
	ix := r.index(config.Labels[kuberuntime.LabelPodUID])
	ix.containers = append(ix.containers, id)
	return id, nil
}

func (r *Runtime) StartContainer(_ context.Context, id string) error {
	return r.changeContainer(id, func(c *memContainer) error {
		if c.state != runtimeapi.ContainerState_CONTAINER_CREATED {
			return status.Errorf(codes.FailedPrecondition, "container %q is %s, not created", id, c.state)
		}
		c.state, c.startedAt = runtimeapi.ContainerState_CONTAINER_RUNNING, time.Now().UnixNano()
		return nil
	})
}

func (r *Runtime) StopContainer(_ context.Context, id string, _ int64) error {
	return r.changeContainer(id, func(c *memContainer) error {
		if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			r.exit(c, 137, time.Now().UnixNano())
		}
		return nil
	})
}

// changeContainer counts a call and runs change on container id under
// r.mu; NotFound if there is no such container.
func (r *Runtime) changeContainer(id string, change func(*memContainer) error) error {
	r.calls.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.container(id)
	if err != nil {
		return err
	}
	return change(c)
}

// container returns the container id, or NotFound; r.mu is held.
func (r *Runtime) container(id string) (*memContainer, error) {
	if c := r.containers[id]; c != nil {
		return c, nil
	}
	return nil, notFound("container", id)
}

// exit marks c exited; r.mu is held.
func (r *Runtime) exit(c *memContainer, code int32, at int64) {
	c.state, c.exitCode, c.finishedAt = runtimeapi.ContainerState_CONTAINER_EXITED, code, at
}

func (r *Runtime) RemoveContainer(_ context.Context, id string) error {
	r.calls.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.containers[id]
	if c == nil {
		return nil
	}
	delete(r.containers, id)
	if ix := r.byPod[c.labels[kuberuntime.LabelPodUID]]; ix != nil {
		ix.containers = without(ix.containers, id)
	}
	return nil
}

func (r *Runtime) ListContainers(_ context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	r.calls.Add(1)
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []*runtimeapi.Container
	add := func(id string, c *memContainer) {
		if f.GetId() != "" && f.GetId() != id || f.GetPodSandboxId() != "" && f.GetPodSandboxId() != c.sandboxID ||
			f.GetState() != nil && f.GetState().State != c.state || !matches(c.labels, f.GetLabelSelector()) {
			return
		}
		out = append(out, &runtimeapi.Container{Id: id, PodSandboxId: c.sandboxID, Metadata: c.meta, Image: c.image,
			ImageRef: c.image.GetImage(), State: c.state, CreatedAt: c.createdAt, Labels: c.labels, Annotations: c.annots})
	}
	each(r, f.GetLabelSelector(), r.containers, func(ix *memPodIndex) []string { return ix.containers }, add)
	return out, nil
}

func (r *Runtime) ContainerStatus(_ context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	r.calls.Add(1)
	r.mu.RLock()
	defer r.mu.RUnlock()
	c, err := r.container(id)
	if err != nil {
		return nil, err
	}
	st := &runtimeapi.ContainerStatus{Id: id, Metadata: c.meta, State: c.state, CreatedAt: c.createdAt,
		StartedAt: c.startedAt, FinishedAt: c.finishedAt, ExitCode: c.exitCode, Image: c.image,
		ImageRef: c.image.GetImage(), Labels: c.labels, Annotations: c.annots}
	if c.state == runtimeapi.ContainerState_CONTAINER_EXITED {
		st.Reason = "Completed"
		if c.exitCode != 0 {
			st.Reason = "Error"
		}
	}
	return &runtimeapi.ContainerStatusResponse{Status: st}, nil
}

func (r *Runtime) ExecSync(_ context.Context, id string, _ []string, _ time.Duration) ([]byte, []byte, error) {
	r.calls.Add(1)
	return nil, nil, nil
}

func (r *Runtime) PullImage(_ context.Context, image *runtimeapi.ImageSpec, _ *runtimeapi.AuthConfig, _ *runtimeapi.PodSandboxConfig) (string, error) {
	return image.GetImage(), nil
}

func (r *Runtime) ImageStatus(_ context.Context, image *runtimeapi.ImageSpec, _ bool) (*runtimeapi.ImageStatusResponse, error) {
	return &runtimeapi.ImageStatusResponse{Image: &runtimeapi.Image{Id: image.GetImage(), RepoTags: []string{image.GetImage()}, Size: 1 << 20}}, nil
}

func (r *Runtime) ListImages(context.Context, *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	return nil, nil
}

func (r *Runtime) RemoveImage(context.Context, *runtimeapi.ImageSpec) error { return nil }

var _ cri.ImageService = &Runtime{}
