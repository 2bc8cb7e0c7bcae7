package procruntime

import (
	"context"
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ContainerStatus reports one container.
func (r *Runtime) ContainerStatus(ctx context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := lookup(r.containers, "container", req.GetContainerId())
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.ContainerStatusResponse{Status: r.containerStatus(c)}
	if req.GetVerbose() {
		resp.Info = map[string]string{
			"pid":       strconv.Itoa(c.rec.Process.PID),
			"shimPid":   strconv.Itoa(c.rec.Shim.PID),
			"sandboxID": c.rec.SandboxID,
			// As containerd: one JSON document under "info", which crictl
			// inspect shows as .info (pid, sandboxID, config, …).
			"info": verboseInfo(map[string]any{
				"pid":         c.rec.Process.PID,
				"shimPid":     c.rec.Shim.PID,
				"sandboxID":   c.rec.SandboxID,
				"runtimeType": RuntimeName,
				"config":      protoJSON(c.config),
			}),
		}
	}
	return resp, nil
}

func (r *Runtime) containerStatus(c *container) *runtimeapi.ContainerStatus {
	st := &runtimeapi.ContainerStatus{
		Id:          c.rec.ID,
		Metadata:    c.config.GetMetadata(),
		State:       c.state(),
		CreatedAt:   c.rec.CreatedAt,
		StartedAt:   c.rec.StartedAt,
		Image:       c.config.GetImage(),
		ImageRef:    c.rec.ImageRef,
		ImageId:     c.rec.ImageRef,
		Labels:      c.config.GetLabels(),
		Annotations: c.config.GetAnnotations(),
		Mounts:      r.visibleMounts(c.config.GetMounts()),
		LogPath:     c.rec.LogPath,
		StopSignal:  c.config.GetStopSignal(),
		Resources:   resourcesOf(c),
	}
	if c.exit != nil {
		st.ExitCode = c.exit.ExitCode
		st.FinishedAt = c.exit.FinishedAt
		st.Reason = c.exit.Reason
		st.Message = c.exit.Message
	}
	return st
}

// containerStatusesLocked returns the statuses of a sandbox's containers,
// oldest first.
func (r *Runtime) containerStatusesLocked(sandboxID string) []*runtimeapi.ContainerStatus {
	var out []*runtimeapi.ContainerStatus
	for _, c := range r.containers {
		if c.rec.SandboxID == sandboxID {
			out = append(out, r.containerStatus(c))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt < out[j].CreatedAt })
	return out
}

// ListContainers lists containers matching the filter, oldest first.
func (r *Runtime) ListContainers(ctx context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	f := req.GetFilter()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*runtimeapi.Container
	for id, c := range r.containers {
		switch {
		case !strings.HasPrefix(id, f.GetId()),
			!strings.HasPrefix(c.rec.SandboxID, f.GetPodSandboxId()),
			f.GetState() != nil && f.GetState().GetState() != c.state(),
			!matchLabels(c.config.GetLabels(), f.GetLabelSelector()):
			continue
		}
		out = append(out, &runtimeapi.Container{
			Id:           id,
			PodSandboxId: c.rec.SandboxID,
			Metadata:     c.config.GetMetadata(),
			Image:        c.config.GetImage(),
			ImageRef:     c.rec.ImageRef,
			ImageId:      c.rec.ImageRef,
			State:        c.state(),
			CreatedAt:    c.rec.CreatedAt,
			Labels:       c.config.GetLabels(),
			Annotations:  c.config.GetAnnotations(),
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt < out[j].CreatedAt })
	return &runtimeapi.ListContainersResponse{Containers: out}, nil
}

// visibleMounts reports each mount as the process sees it: in a
// filesystem view, or on a runtime that refuses what it cannot mount, as
// configured; with HostFilesystem (no mounts made) what the process finds
// at the container path is the host's file at that same path (so the agent
// reads a termination message where the process wrote it).
func (r *Runtime) visibleMounts(mounts []*runtimeapi.Mount) []*runtimeapi.Mount {
	out := make([]*runtimeapi.Mount, 0, len(mounts))
	for _, m := range mounts {
		host := m.GetHostPath()
		if !r.iso.mode.Filesystem && r.opts.HostFilesystem {
			host = m.GetContainerPath()
		}
		out = append(out, &runtimeapi.Mount{ContainerPath: m.GetContainerPath(), HostPath: host, Readonly: m.GetReadonly(), Propagation: m.GetPropagation()})
	}
	return out
}

// verboseInfo is a verbose status' "info" document.
func verboseInfo(m map[string]any) string {
	b, err := json.Marshal(m)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// protoJSON is m as a JSON value (nil if it cannot be rendered).
func protoJSON(m proto.Message) json.RawMessage {
	b, err := protojson.Marshal(m)
	if err != nil {
		return nil
	}
	return b
}
