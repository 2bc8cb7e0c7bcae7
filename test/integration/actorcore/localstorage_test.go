package actorcore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/cri/procruntime"
	"github.com/actorlet/actorlet/cri/procruntime/proctest"
	"github.com/actorlet/actorlet/node/agent"
)

// evicted is a waitPod condition: the pod ended Failed.
func evicted(p *v1.Pod) error {
	if p.Status.Phase != v1.PodFailed {
		return fmt.Errorf("phase %s", p.Status.Phase)
	}
	return nil
}

// scratchPod is a pod with an emptyDir "scratch" (sizeLimit when given)
// at /scratch whose container runs script.
func (e *env) scratchPod(name, sizeLimit, script string) *v1.Pod {
	c := shell("app", script)
	c.VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	p := e.pod(name, c)
	ed := &v1.EmptyDirVolumeSource{}
	if sizeLimit != "" {
		q := resource.MustParse(sizeLimit)
		ed.SizeLimit = &q
	}
	p.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: ed}}}
	return p
}

// emptyDir is the host path of the pod's emptyDir volume.
func (e *env) emptyDir(name, volume string) string {
	e.t.Helper()
	p, err := e.podStatus(name)
	if err != nil {
		e.t.Fatal(err)
	}
	return filepath.Join(e.cfg.RootDir, "pods", string(p.UID), "volumes", "emptydir", volume)
}

// TestLocalStorageEviction: a real agent on the process runtime with
// filesystem views, no eviction threshold. A pod writing 4Mi into an
// emptyDir limited to 1Mi is evicted with the kubelet's message, status
// and event, as is a pod whose logs exceed its ephemeral-storage limit;
// a pod under its emptyDir's limit keeps running.
func TestLocalStorageEviction(t *testing.T) {
	e := newEnv(t, envOptions{
		runtime: func(t testing.TB, root string) (*procruntime.Runtime, *cri.Client) {
			return proctest.StartIsolated(t, root)
		},
		configure: func(c *agent.Config) {
			c.EvictionHard = ""
			c.EvictionMonitoringInterval = 200 * time.Millisecond
		},
	})
	e.apply(e.scratchPod("under", "10Mi", "head -c 1048576 /dev/zero > /scratch/fill && exec sleep 3600"))
	e.waitPod("under", 30*time.Second, running)
	fill := filepath.Join(e.emptyDir("under", "scratch"), "fill")
	eventually(t, 10*time.Second, func() error {
		st, err := os.Stat(fill)
		if err != nil || st.Size() < 1<<20 {
			return fmt.Errorf("under's emptyDir not filled yet: %v", err)
		}
		return nil
	})

	e.apply(e.scratchPod("over", "1Mi", "head -c 4194304 /dev/zero > /scratch/fill && exec sleep 3600"))
	over := e.waitPod("over", 30*time.Second, evicted)
	wantMsg := `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `
	if over.Status.Reason != "Evicted" || over.Status.Message != wantMsg {
		t.Fatalf("over: %s %q %q, want Evicted %q", over.Status.Phase, over.Status.Reason, over.Status.Message, wantMsg)
	}
	if ev := e.waitEvent("over", v1.EventTypeWarning, "Evicted", 10*time.Second); ev.Message != wantMsg {
		t.Errorf("event message %q, want %q", ev.Message, wantMsg)
	}

	chatty := e.pod("chatty", shell("app", "yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 2097152; exec sleep 3600"))
	chatty.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Mi")}
	e.apply(chatty)
	got := e.waitPod("chatty", 30*time.Second, evicted)
	if want := "Pod ephemeral local storage usage exceeds the total limit of containers 1Mi. "; got.Status.Reason != "Evicted" || got.Status.Message != want {
		t.Fatalf("chatty: %q %q, want Evicted %q", got.Status.Reason, got.Status.Message, want)
	}

	// The rounds that evicted both saw under's 1Mi: it runs on.
	p, err := e.podStatus("under")
	if err != nil {
		t.Fatal(err)
	}
	if err := running(p); err != nil {
		t.Fatalf("under after the evictions: %v", err)
	}
}

// TestDiskPressureReclaimsBeforeEvicting: the agent's root directory and
// the runtime's state on a 64Mi tmpfs the test mounts, a hard threshold
// of nodefs.available<30Mi. A completed pod's 30Mi emptyDir and its unused
// image are reclaimed (node event NodeResourcesReclaimed) and no pod is
// evicted; when a running pod fills the disk and a reclaim frees nothing,
// that pod is evicted with the kubelet's message.
func TestDiskPressureReclaimsBeforeEvicting(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	disk := t.TempDir()
	if err := syscall.Mount("tmpfs", disk, "tmpfs", 0, "size=64m,mode=0755"); err != nil {
		t.Fatalf("mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { // after the env's cleanup (runtime destroyed)
		if err := syscall.Unmount(disk, 0); err != nil {
			t.Errorf("unmount the test's tmpfs: %v", err)
			_ = syscall.Unmount(disk, syscall.MNT_DETACH)
		}
	})
	e := newEnv(t, envOptions{
		runtime: func(t testing.TB, _ string) (*procruntime.Runtime, *cri.Client) {
			return proctest.StartIsolated(t, filepath.Join(disk, "runtime"))
		},
		configure: func(c *agent.Config) {
			c.RootDir = filepath.Join(disk, "agent")
			c.PodLogsDir = filepath.Join(disk, "agent", "pod-logs")
			c.EvictionHard = "nodefs.available<30Mi"
			c.EvictionMonitoringInterval = 200 * time.Millisecond
			c.EvictionPressureTransitionPeriod = 5 * time.Second
			c.ImageMinimumGCAge = 0
		},
	})
	e.apply(e.scratchPod("keeper", "", "exec sleep 3600"))
	e.waitPod("keeper", 30*time.Second, running)
	done := e.scratchPod("done", "", "exit 0")
	done.Spec.Containers[0].Image = "alpine:3.20"
	done.Spec.RestartPolicy = v1.RestartPolicyNever
	e.apply(done)
	e.waitPod("done", 30*time.Second, func(p *v1.Pod) error {
		if p.Status.Phase != v1.PodSucceeded {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		return nil
	})
	// The completed pod's content is all that fills the disk.
	doneDir := e.emptyDir("done", "scratch")
	eventually(t, 10*time.Second, func() error { // its sandbox is stopped once its work is over
		sbs, err := e.sandboxes("done")
		if err != nil {
			return err
		}
		for _, sb := range sbs {
			if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
				return errors.New("done's sandbox still ready")
			}
		}
		return nil
	})
	// 30Mi in the completed pod's emptyDir (33Mi stay free), then 10Mi
	// elsewhere on the disk cross the threshold: the reclaim finds the
	// first file complete and closed, whenever its round runs.
	if err := os.WriteFile(filepath.Join(doneDir, "ballast"), make([]byte, 30<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(disk, "filler"), make([]byte, 10<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	ev := e.waitEvent("", v1.EventTypeNormal, "NodeResourcesReclaimed", 30*time.Second)
	if !strings.Contains(ev.Message, "of 1 terminated pods, and 1 unused images") {
		t.Errorf("reclaim event %q, want the completed pod's content and alpine", ev.Message)
	}
	e.waitEvent("", v1.EventTypeWarning, "EvictionThresholdMet", 10*time.Second)
	if _, err := os.Stat(doneDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the completed pod's emptyDir after the reclaim: %v, want it gone", err)
	}
	if cs, err := e.containers("done"); err != nil || len(cs) != 0 {
		t.Errorf("the completed pod's containers after the reclaim: %d, %v", len(cs), err)
	}
	p, err := e.podStatus("keeper")
	if err != nil || running(p) != nil {
		t.Fatalf("keeper after the reclaim: %v %v, want it running (the reclaim was enough)", err, running(p))
	}
	if p, err := e.podStatus("done"); err != nil || p.Status.Phase != v1.PodSucceeded {
		t.Fatalf("done after the reclaim: %v, want its Succeeded status kept", err)
	}

	// Now the running pod fills the disk: nothing left to reclaim.
	if err := os.WriteFile(filepath.Join(e.emptyDir("keeper", "scratch"), "ballast"), make([]byte, 30<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	keeper := e.waitPod("keeper", 30*time.Second, evicted)
	wantPrefix := "The node was low on resource: ephemeral-storage. Threshold quantity: 30Mi, available: "
	if keeper.Status.Reason != "Evicted" || !strings.HasPrefix(keeper.Status.Message, wantPrefix) {
		t.Fatalf("keeper: %q %q, want Evicted with the kubelet's message", keeper.Status.Reason, keeper.Status.Message)
	}
	t.Logf("keeper evicted: %s", keeper.Status.Message)
}
