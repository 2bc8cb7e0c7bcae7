package kuberuntime

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// recordingCgroups stands in for cri/cm (whose own tests run as root):
// it records the calls and can fail EnsurePod.
type recordingCgroups struct {
	mu      sync.Mutex
	ensured []types.UID
	removed []types.UID
	fail    error
	orphans []types.UID // pod cgroups "present"; RemoveOrphans removes those not kept
}

func (r *recordingCgroups) EnsurePod(pod *v1.Pod) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return "", r.fail
	}
	r.ensured = append(r.ensured, pod.UID)
	return "/kubepods/besteffort/pod" + string(pod.UID), nil
}

func (r *recordingCgroups) RemovePod(uid types.UID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removed = append(r.removed, uid)
	return nil
}

func (r *recordingCgroups) RemoveOrphans(keep func(types.UID) bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, uid := range r.orphans {
		if !keep(uid) {
			r.removed = append(r.removed, uid)
		}
	}
	return nil
}

// sandboxRecorder keeps the sandbox configs the manager sends.
type sandboxRecorder struct {
	*fakeRuntime
	mu      sync.Mutex
	parents []string
}

func (s *sandboxRecorder) RunPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	s.mu.Lock()
	s.parents = append(s.parents, cfg.GetLinux().GetCgroupParent())
	s.mu.Unlock()
	return s.fakeRuntime.RunPodSandbox(ctx, cfg, handler)
}

// With QoS cgroups, the pod's cgroup is made before its sandbox and given
// to the runtime as the sandbox's cgroup parent; it is removed after the
// pod's cleanup; a pod whose cgroup cannot be made gets no sandbox; GC
// sweeps the cgroups of pods the runtime has no sandbox of.
func TestPodCgroups(t *testing.T) {
	e := newEnv(t)
	cg := &recordingCgroups{}
	rec := &sandboxRecorder{fakeRuntime: e.rt}
	opts := e.m.opts
	opts.PodCgroups = cg
	e.m = NewManager(rec, opts)

	pod := newPod("web", "app")
	if err := e.sync(t, pod, nil).Error(); err != nil {
		t.Fatal(err)
	}
	if len(rec.parents) != 1 || rec.parents[0] != "/kubepods/besteffort/podweb-uid" {
		t.Errorf("sandbox cgroup parents %q", rec.parents)
	}
	if len(cg.ensured) == 0 || cg.ensured[0] != pod.UID {
		t.Errorf("ensured %v", cg.ensured)
	}

	// GC: a cgroup of a pod with no sandbox goes, the running pod's stays.
	cg.orphans = []types.UID{pod.UID, "gone-uid"}
	e.m.GC()
	if len(cg.removed) != 1 || cg.removed[0] != "gone-uid" {
		t.Errorf("orphan sweep removed %v, want [gone-uid]", cg.removed)
	}
	cg.removed, cg.orphans = nil, nil

	if err := e.m.CleanupPod(context.Background(), pod.UID); err != nil {
		t.Fatal(err)
	}
	if len(cg.removed) != 1 || cg.removed[0] != pod.UID {
		t.Errorf("removed after cleanup %v", cg.removed)
	}

	cg.fail = errors.New("no space left on device")
	other := newPod("db", "app")
	err := e.sync(t, other, nil).Error()
	if !errors.Is(err, ErrConfigPodSandbox) || !strings.Contains(err.Error(), "pod cgroup: no space left on device") {
		t.Errorf("sync with a failing cgroup: %v", err)
	}
	if len(rec.parents) != 1 {
		t.Errorf("a sandbox was created without its cgroup: %q", rec.parents)
	}
}
