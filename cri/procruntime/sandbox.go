package procruntime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// A sandbox has no process of its own: it is a record grouping containers,
// with the log directory, hostname and labels of the pod. READY from
// RunPodSandbox until StopPodSandbox (or a reboot), then NOTREADY.

// sandboxRecord is record.json of a sandbox.
type sandboxRecord struct {
	ID             string `json:"id"`
	CreatedAt      int64  `json:"createdAt"`
	Ready          bool   `json:"ready"`
	BootID         string `json:"bootId"`
	RuntimeHandler string `json:"runtimeHandler,omitempty"`
	// Holder holds the sandbox's namespaces (isolation.go); zero without.
	Holder procID `json:"holder,omitempty"`
}

type sandbox struct {
	rec    sandboxRecord
	config *runtimeapi.PodSandboxConfig
}

func (r *Runtime) sandboxDir(id string) string {
	return filepath.Join(r.opts.RootDir, sandboxesDir, id)
}

func (s *sandbox) key() string {
	m := s.config.GetMetadata()
	return sandboxKey(m.GetNamespace(), m.GetName(), m.GetUid(), m.GetAttempt())
}

// state is READY from RunPodSandbox until StopPodSandbox, unless the
// holder of its namespaces died: then nothing can start in it any more, and
// NOTREADY makes its client (the kubelet, the agent) create a new sandbox.
func (s *sandbox) state() runtimeapi.PodSandboxState {
	if s.rec.Ready && (s.rec.Holder.PID == 0 || s.rec.Holder.alive()) {
		return runtimeapi.PodSandboxState_SANDBOX_READY
	}
	return runtimeapi.PodSandboxState_SANDBOX_NOTREADY
}

func (r *Runtime) loadSandboxes() error {
	entries, err := os.ReadDir(filepath.Join(r.opts.RootDir, sandboxesDir))
	if err != nil {
		return fmt.Errorf("procruntime: load sandboxes: %w", err)
	}
	for _, e := range entries {
		dir := r.sandboxDir(e.Name())
		s := &sandbox{config: &runtimeapi.PodSandboxConfig{}}
		err := readState(dir, &s.rec, s.config)
		if err != nil {
			// RunPodSandbox crashed half-way: the sandbox never existed.
			klog.InfoS("Removing incomplete sandbox state", "dir", dir, "err", err)
			_ = os.RemoveAll(dir)
			continue
		}
		if s.rec.Ready && (s.rec.BootID != r.boot || (s.rec.Holder.PID != 0 && !s.rec.Holder.alive())) {
			s.rec.Ready = false
			if err := writeJSON(filepath.Join(dir, "record.json"), s.rec); err != nil {
				return fmt.Errorf("procruntime: load sandbox %q: %w", s.rec.ID, err)
			}
		}
		r.sandboxes[s.rec.ID] = s
		r.names[s.key()] = s.rec.ID
	}
	return nil
}

// RunPodSandbox records a new READY sandbox.
func (r *Runtime) RunPodSandbox(ctx context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	config := req.GetConfig()
	m := config.GetMetadata()
	switch {
	case config == nil:
		return nil, status.Error(codes.InvalidArgument, "config: must be set")
	case m.GetName() == "":
		return nil, status.Error(codes.InvalidArgument, "config.metadata.name: must not be empty")
	case m.GetNamespace() == "":
		return nil, status.Error(codes.InvalidArgument, "config.metadata.namespace: must not be empty")
	case m.GetUid() == "":
		return nil, status.Error(codes.InvalidArgument, "config.metadata.uid: must not be empty")
	case !knownHandler(req.GetRuntimeHandler()):
		return nil, status.Errorf(codes.InvalidArgument, "runtime_handler %q: unknown (the process runtime has only the default handler \"\")", req.GetRuntimeHandler())
	}
	if err := checkDNS(config.GetDnsConfig()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if len(config.GetHostname()) > 64 {
		return nil, status.Errorf(codes.InvalidArgument, "config.hostname: %d bytes, limit is 64", len(config.GetHostname()))
	}
	if _, err := sandboxCgroupParent(config); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if err := checkSysctls(config.GetLinux().GetSysctls(), r.iso.mode.Namespaces, config.GetLinux().GetSecurityContext().GetNamespaceOptions()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	s := &sandbox{
		rec: sandboxRecord{
			ID:             newID(),
			CreatedAt:      time.Now().UnixNano(),
			Ready:          true,
			BootID:         r.boot,
			RuntimeHandler: req.GetRuntimeHandler(),
		},
		config: config,
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.reserveName(s.key(), s.rec.ID); err != nil {
		return nil, err
	}
	dir := r.sandboxDir(s.rec.ID)
	err := os.Mkdir(dir, 0o700)
	if err == nil {
		err = writeProto(filepath.Join(dir, "config.json"), config)
	}
	if err == nil && r.iso.mode.Namespaces {
		err = r.startHolder(s)
	}
	if err == nil {
		err = writeJSON(filepath.Join(dir, "record.json"), s.rec)
	}
	if err != nil {
		delete(r.names, s.key())
		stopHolder(s.rec.Holder)
		_ = os.RemoveAll(dir)
		return nil, status.Errorf(codes.Internal, "run sandbox %q: %v", s.key(), err)
	}
	r.sandboxes[s.rec.ID] = s
	r.publishSandboxLocked(s, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	klog.V(2).InfoS("Sandbox started", "podSandboxID", s.rec.ID, "pod", klog.KRef(m.GetNamespace(), m.GetName()))
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: s.rec.ID}, nil
}

// sandboxWithContainers looks a sandbox up with the IDs of its containers.
func (r *Runtime) sandboxWithContainers(id string) (*sandbox, []string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, err := lookup(r.sandboxes, "sandbox", id)
	if err != nil {
		return nil, nil, err
	}
	return s, r.sandboxContainerIDsLocked(s.rec.ID), nil
}

// StopPodSandbox kills all the sandbox's containers and marks it NOTREADY.
// Stopping a stopped or unknown sandbox is fine (CRI: idempotent).
func (r *Runtime) StopPodSandbox(ctx context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	s, ids, err := r.sandboxWithContainers(req.GetPodSandboxId())
	if status.Code(err) == codes.NotFound {
		return &runtimeapi.StopPodSandboxResponse{}, nil
	}
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if err := r.stopContainer(ctx, id, 0); err != nil && status.Code(err) != codes.NotFound {
			return nil, status.Errorf(status.Code(err), "stop sandbox %q: %v", s.rec.ID, err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.sandboxes[s.rec.ID]; !ok || !s.rec.Ready {
		return &runtimeapi.StopPodSandboxResponse{}, nil
	}
	stopHolder(s.rec.Holder)
	s.rec.Ready = false
	if err := writeJSON(filepath.Join(r.sandboxDir(s.rec.ID), "record.json"), s.rec); err != nil {
		s.rec.Ready = true
		return nil, status.Errorf(codes.Internal, "stop sandbox %q: %v", s.rec.ID, err)
	}
	r.publishSandboxLocked(s, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

// RemovePodSandbox kills and removes the sandbox's containers, then the
// sandbox's records; the log directory stays. Removing an unknown sandbox
// is fine.
func (r *Runtime) RemovePodSandbox(ctx context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	s, ids, err := r.sandboxWithContainers(req.GetPodSandboxId())
	if status.Code(err) == codes.NotFound {
		return &runtimeapi.RemovePodSandboxResponse{}, nil
	}
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if err := r.removeContainer(ctx, id); err != nil {
			return nil, status.Errorf(status.Code(err), "remove sandbox %q: %v", s.rec.ID, err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.sandboxes[s.rec.ID]; !ok {
		return &runtimeapi.RemovePodSandboxResponse{}, nil
	}
	stopHolder(s.rec.Holder)
	if err := os.RemoveAll(r.sandboxDir(s.rec.ID)); err != nil {
		return nil, status.Errorf(codes.Internal, "remove sandbox %q: %v", s.rec.ID, err)
	}
	delete(r.sandboxes, s.rec.ID)
	delete(r.names, s.key())
	s.rec.Ready = false
	r.publishSandboxLocked(s, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT)
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

func (r *Runtime) sandboxContainerIDsLocked(sandboxID string) []string {
	var ids []string
	for id, c := range r.containers {
		if c.rec.SandboxID == sandboxID {
			ids = append(ids, id)
		}
	}
	return ids
}

// PodSandboxStatus reports the sandbox.
func (r *Runtime) PodSandboxStatus(ctx context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, err := lookup(r.sandboxes, "sandbox", req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.PodSandboxStatusResponse{
		Status:             r.sandboxStatusLocked(s),
		ContainersStatuses: r.containerStatusesLocked(s.rec.ID),
		Timestamp:          time.Now().UnixNano(),
	}
	if req.GetVerbose() {
		resp.Info = map[string]string{"runtime": RuntimeName, "bootID": s.rec.BootID,
			"info": verboseInfo(map[string]any{"pid": s.rec.Holder.PID, "runtimeType": RuntimeName, "config": protoJSON(s.config)})}
	}
	return resp, nil
}

func (r *Runtime) sandboxStatusLocked(s *sandbox) *runtimeapi.PodSandboxStatus {
	return &runtimeapi.PodSandboxStatus{
		Id:             s.rec.ID,
		Metadata:       s.config.GetMetadata(),
		State:          s.state(),
		CreatedAt:      s.rec.CreatedAt,
		Network:        &runtimeapi.PodSandboxNetworkStatus{Ip: r.opts.HostIP},
		Linux:          &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: s.config.GetLinux().GetSecurityContext().GetNamespaceOptions()}},
		Labels:         s.config.GetLabels(),
		Annotations:    s.config.GetAnnotations(),
		RuntimeHandler: s.rec.RuntimeHandler,
	}
}

// ListPodSandbox lists sandboxes matching the filter, oldest first.
func (r *Runtime) ListPodSandbox(ctx context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	f := req.GetFilter()
	r.mu.Lock()
	defer r.mu.Unlock()
	var items []*runtimeapi.PodSandbox
	for id, s := range r.sandboxes {
		if !strings.HasPrefix(id, f.GetId()) {
			continue
		}
		if f.GetState() != nil && f.GetState().GetState() != s.state() {
			continue
		}
		if !matchLabels(s.config.GetLabels(), f.GetLabelSelector()) {
			continue
		}
		items = append(items, &runtimeapi.PodSandbox{
			Id:             id,
			Metadata:       s.config.GetMetadata(),
			State:          s.state(),
			CreatedAt:      s.rec.CreatedAt,
			Labels:         s.config.GetLabels(),
			Annotations:    s.config.GetAnnotations(),
			RuntimeHandler: s.rec.RuntimeHandler,
		})
	}
	sort.Slice(items, func(i, j int) bool { return items[i].CreatedAt < items[j].CreatedAt })
	return &runtimeapi.ListPodSandboxResponse{Items: items}, nil
}
