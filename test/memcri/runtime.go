// Package memcri is an in-memory CRI runtime for control-plane tests and
// benchmarks: many agents in one process, no processes run.
package memcri

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/cri/kuberuntime"
)

// Runtime is an in-memory CRI runtime for the control-plane benchmarks:
// sandboxes and containers are records, "running" is a state field, nothing
// is executed. It exists because the upstream FakeRuntimeService records
// every call in an ever-growing slice and answers label-filtered lists by
// scanning everything under one lock, which at 10,000+ pods measures the
// fake, not the agent. Here lists filtered by pod UID (what GetPodStatus
// asks) are answered from an index. It has no event stream (Unimplemented),
// so the PLEG relists, as on containerd 1.6.
type Runtime struct {
	mu         sync.RWMutex
	seq        atomic.Uint64
	sandboxes  map[string]*memSandbox
	containers map[string]*memContainer
	byPod      map[string]*memPodIndex // pod UID label → its records
	calls      atomic.Uint64
}

type memPodIndex struct {
	sandboxes  []string
	containers []string
}

type memSandbox struct {
	meta      *runtimeapi.PodSandboxMetadata
	labels    map[string]string
	annots    map[string]string
	state     runtimeapi.PodSandboxState
	createdAt int64
}

type memContainer struct {
	sandboxID  string
	meta       *runtimeapi.ContainerMetadata
	image      *runtimeapi.ImageSpec
	labels     map[string]string
	annots     map[string]string
	state      runtimeapi.ContainerState
	createdAt  int64
	startedAt  int64
	finishedAt int64
	exitCode   int32
}

var _ cri.Runtime = &Runtime{}

func New() *Runtime {
	return &Runtime{
		sandboxes:  map[string]*memSandbox{},
		containers: map[string]*memContainer{},
		byPod:      map[string]*memPodIndex{},
	}
}

// newID counts a create call and gives the new sandbox or container (kind)
// its ID, after checking its config has the metadata CRI requires.
func (r *Runtime) newID(prefix, kind string, hasMetadata bool) (string, error) {
	r.calls.Add(1)
	if !hasMetadata {
		return "", status.Error(codes.InvalidArgument, kind+" config: metadata: required")
	}
	return fmt.Sprintf("%s%012d", prefix, r.seq.Add(1)), nil
}

func notFound(kind, id string) error {
	return status.Errorf(codes.NotFound, "%s %q not found", kind, id)
}

func (r *Runtime) index(uid string) *memPodIndex {
	ix := r.byPod[uid]
	if ix == nil {
		ix = &memPodIndex{}
		r.byPod[uid] = ix
	}
	return ix
}

// Counts is the number of ready sandboxes and running containers.
func (r *Runtime) Counts() (ready, running int) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, s := range r.sandboxes {
		if s.state == runtimeapi.PodSandboxState_SANDBOX_READY {
			ready++
		}
	}
	for _, c := range r.containers {
		if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			running++
		}
	}
	return ready, running
}

func (r *Runtime) Version(context.Context, string) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: "bench-memory", RuntimeVersion: "0.1.0", RuntimeApiVersion: "v1"}, nil
}

func (r *Runtime) Status(context.Context, bool) (*runtimeapi.StatusResponse, error) {
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true}, {Type: runtimeapi.NetworkReady, Status: true},
	}}}, nil
}

func (r *Runtime) GetContainerEvents(context.Context, chan *runtimeapi.ContainerEventResponse, func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	return status.Error(codes.Unimplemented, "the benchmark's memory runtime has no event stream")
}

func (r *Runtime) RunPodSandbox(_ context.Context, config *runtimeapi.PodSandboxConfig, _ string) (string, error) {
	id, err := r.newID("sb", "sandbox", config.GetMetadata() != nil)
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sandboxes[id] = &memSandbox{meta: config.Metadata, labels: config.Labels, annots: config.Annotations,
		state: runtimeapi.PodSandboxState_SANDBOX_READY, createdAt: time.Now().UnixNano()}
	ix := r.index(config.Labels[kuberuntime.LabelPodUID])
	ix.sandboxes = append(ix.sandboxes, id)
	return id, nil
}

func (r *Runtime) StopPodSandbox(_ context.Context, id string) error {
	r.calls.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sandboxes[id]
	if s == nil {
		return nil // stopping a removed sandbox is not an error (CRI)
	}
	s.state = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	now := time.Now().UnixNano()
	// Only this pod's containers can be in the sandbox: use the pod index
	// rather than scanning every container of the node.
	if ix := r.byPod[s.labels[kuberuntime.LabelPodUID]]; ix != nil {
		for _, cid := range ix.containers {
			if c := r.containers[cid]; c != nil && c.sandboxID == id && c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
				r.exit(c, 137, now)
			}
		}
	}
	return nil
}

func (r *Runtime) RemovePodSandbox(_ context.Context, id string) error {
	r.calls.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sandboxes[id]
	if s == nil {
		return nil
	}
	uid := s.labels[kuberuntime.LabelPodUID]
	delete(r.sandboxes, id)
	if ix := r.byPod[uid]; ix != nil {
		ix.sandboxes = without(ix.sandboxes, id)
		for _, cid := range ix.containers {
			if r.containers[cid] != nil && r.containers[cid].sandboxID == id {
				delete(r.containers, cid)
			}
		}
		ix.containers = keep(ix.containers, func(cid string) bool { return r.containers[cid] != nil })
		if len(ix.sandboxes) == 0 && len(ix.containers) == 0 {
			delete(r.byPod, uid)
		}
	}
	return nil
}

func (r *Runtime) PodSandboxStatus(_ context.Context, id string, _ bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	r.calls.Add(1)
	r.mu.RLock()
	defer r.mu.RUnlock()
	s := r.sandboxes[id]
	if s == nil {
		return nil, notFound("sandbox", id)
	}
	return &runtimeapi.PodSandboxStatusResponse{Status: &runtimeapi.PodSandboxStatus{
		Id: id, Metadata: s.meta, State: s.state, CreatedAt: s.createdAt, Labels: s.labels, Annotations: s.annots,
		Network: &runtimeapi.PodSandboxNetworkStatus{Ip: "10.0.0.1"},
	}}, nil
}

func (r *Runtime) ListPodSandbox(_ context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	r.calls.Add(1)
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []*runtimeapi.PodSandbox
	add := func(id string, s *memSandbox) {
		if f.GetId() != "" && f.GetId() != id || f.GetState() != nil && f.GetState().State != s.state || !matches(s.labels, f.GetLabelSelector()) {
			return
		}
		out = append(out, &runtimeapi.PodSandbox{Id: id, Metadata: s.meta, State: s.state, CreatedAt: s.createdAt, Labels: s.labels, Annotations: s.annots})
	}
	each(r, f.GetLabelSelector(), r.sandboxes, func(ix *memPodIndex) []string { return ix.sandboxes }, add)
	return out, nil
}

// each calls add for the records of m a list with label selector sel may
// return: with a pod UID in sel, only that pod's (from the index, ids
// picks which of its lists), else all of them. r.mu is held.
func each[T any](r *Runtime, sel map[string]string, m map[string]*T, ids func(*memPodIndex) []string, add func(string, *T)) {
	if uid, ok := sel[kuberuntime.LabelPodUID]; ok {
		if ix := r.byPod[uid]; ix != nil {
			for _, id := range ids(ix) {
				add(id, m[id])
			}
		}
		return
	}
	for id, v := range m {
		add(id, v)
	}
}

func matches(labels, sel map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func without(ids []string, id string) []string {
	return keep(ids, func(s string) bool { return s != id })
}

func keep(ids []string, ok func(string) bool) []string {
	out := ids[:0]
	for _, s := range ids {
		if ok(s) {
			out = append(out, s)
		}
	}
	return out
}
