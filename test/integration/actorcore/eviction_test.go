package actorcore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// parentedRuntime puts every sandbox under one cgroup parent of the test's
// own, so memory.available is measured on this test's pods only (not on
// other suites' containers under the runtime's default parent).
type parentedRuntime struct {
	*cri.Client
	parent string
}

func (r parentedRuntime) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	if config.Linux == nil {
		config.Linux = &runtimeapi.LinuxPodSandboxConfig{}
	}
	config.Linux.CgroupParent = r.parent
	return r.Client.RunPodSandbox(ctx, config, handler)
}

// TestMemoryHogEvictedGuaranteedPodKeepsRunning: a real agent on the
// process runtime with per-container cgroups, memory.available measured on
// the test's own cgroup against a capacity of 400Mi with a hard threshold
// of 250Mi. A best-effort pod that grows to 300Mi is evicted — status
// Failed, reason Evicted, the kubelet's message, DisruptionTarget, a
// Warning Evicted event — while a guaranteed pod keeps running; the node
// reports MemoryPressure while it lasts.
func TestMemoryHogEvictedGuaranteedPodKeepsRunning(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("per-container cgroups need root")
	}
	iso, err := procruntime.ParseIsolation("cgroups")
	if err != nil {
		t.Fatal(err)
	}
	if !procruntime.DefaultIsolation().Cgroups {
		t.Skip("no cgroup v1 memory hierarchy")
	}
	parent := "actorlet-it-" + randomHex(4)
	t.Cleanup(func() { // after the env's cleanup has removed the containers
		for _, ctrl := range []string{"memory", "cpu", "cpuacct", "pids"} {
			_ = os.Remove(filepath.Join("/sys/fs/cgroup", ctrl, parent))
		}
	})
	// Made before the agent starts, so its first rounds find it.
	if err := os.Mkdir(filepath.Join("/sys/fs/cgroup/memory", parent), 0o755); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOptions{
		runtime: func(t testing.TB, root string) (*procruntime.Runtime, *cri.Client) {
			return proctest.StartWith(t, procruntime.Options{RootDir: root, HostIP: "127.0.0.1", Isolation: iso, HostFilesystem: true})
		},
		wrap: func(rt cri.Runtime) cri.Runtime { return parentedRuntime{Client: rt.(*cri.Client), parent: parent} },
		configure: func(c *agent.Config) {
			c.EvictionHard = "memory.available<250Mi"
			c.EvictionMemoryCgroup = parent
			c.EvictionMemoryCapacity = "400Mi"
			c.EvictionMonitoringInterval = 200 * time.Millisecond
			c.EvictionPressureTransitionPeriod = 20 * time.Second
		},
	})
	q := resource.MustParse("50Mi")
	cpu := resource.MustParse("100m")
	g := shell("app", "exec sleep 3600")
	g.Resources = v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: q, v1.ResourceCPU: cpu},
		Limits: v1.ResourceList{v1.ResourceMemory: q, v1.ResourceCPU: cpu}}
	e.apply(e.pod("guaranteed", g))
	e.waitPod("guaranteed", 30*time.Second, running)

	// tail keeps the whole "line" (300Mi of NULs, no newline) in memory
	// and waits for the end of its input.
	e.apply(e.pod("hog", shell("hog", "(head -c 314572800 /dev/zero; exec sleep 3600) | tail")))
	hog := e.waitPod("hog", 60*time.Second, func(p *v1.Pod) error {
		if p.Status.Phase != v1.PodFailed {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		return nil
	})
	wantPrefix := "The node was low on resource: memory. Threshold quantity: 250Mi, available: "
	if hog.Status.Reason != "Evicted" || !strings.HasPrefix(hog.Status.Message, wantPrefix) ||
		!strings.Contains(hog.Status.Message, "Container hog was using ") || !strings.Contains(hog.Status.Message, ", request is 0, has larger consumption of memory. ") {
		t.Fatalf("hog status = %s %q %q, want Evicted with the kubelet's message", hog.Status.Phase, hog.Status.Reason, hog.Status.Message)
	}
	var target *v1.PodCondition
	for i := range hog.Status.Conditions {
		if hog.Status.Conditions[i].Type == v1.DisruptionTarget {
			target = &hog.Status.Conditions[i]
		}
	}
	if target == nil || target.Status != v1.ConditionTrue || target.Reason != v1.PodReasonTerminationByKubelet || target.Message != hog.Status.Message {
		t.Fatalf("hog DisruptionTarget = %+v", target)
	}
	ev := e.waitEvent("hog", v1.EventTypeWarning, "Evicted", 10*time.Second)
	if ev.Message != hog.Status.Message {
		t.Errorf("event message %q, want the status message %q", ev.Message, hog.Status.Message)
	}
	t.Logf("hog evicted: %s", hog.Status.Message)
	// The node reports the pressure (held for the transition period, 20 s,
	// against a heartbeat every 2 s).
	eventually(t, 15*time.Second, func() error {
		for _, c := range e.nodeEntry().Status.Conditions {
			if c.Type == v1.NodeMemoryPressure {
				if c.Status != v1.ConditionTrue || c.Reason != "KubeletHasInsufficientMemory" {
					return fmt.Errorf("MemoryPressure %s %s", c.Status, c.Reason)
				}
				return nil
			}
		}
		return fmt.Errorf("no MemoryPressure condition")
	})
	// Under memory pressure a new best-effort pod is refused at admission.
	e.apply(e.pod("late", shell("app", "exec sleep 3600")))
	late := e.waitPod("late", 10*time.Second, func(p *v1.Pod) error {
		if p.Status.Phase != v1.PodFailed {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		return nil
	})
	if late.Status.Reason != "Evicted" || late.Status.Message != "The node had condition: [MemoryPressure]. " {
		t.Errorf("best-effort pod under memory pressure: %q %q, want refused with the kubelet's reason", late.Status.Reason, late.Status.Message)
	}

	p, err := e.podStatus("guaranteed")
	if err != nil {
		t.Fatal(err)
	}
	if err := running(p); err != nil {
		t.Fatalf("guaranteed pod after the eviction: %v", err)
	}
	// Once the transition period is over the condition goes.
	eventually(t, 60*time.Second, func() error {
		for _, c := range e.nodeEntry().Status.Conditions {
			if c.Type == v1.NodeMemoryPressure && c.Status != v1.ConditionFalse {
				return fmt.Errorf("MemoryPressure %s", c.Status)
			}
		}
		return nil
	})
	if p, err = e.podStatus("guaranteed"); err != nil || running(p) != nil {
		t.Fatalf("guaranteed pod at the end: %v %v", err, running(p))
	}
}
