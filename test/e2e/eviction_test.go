//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// nodeWorkingSet is the root memory cgroup's working set (cgroup v1: usage
// less total_inactive_file), as the agent reads it.
func nodeWorkingSet(t *testing.T) uint64 {
	t.Helper()
	b, err := os.ReadFile("/sys/fs/cgroup/memory/memory.usage_in_bytes")
	if err != nil {
		t.Skipf("no cgroup v1 memory hierarchy: %v", err)
	}
	usage, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/sys/fs/cgroup/memory/memory.stat")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "total_inactive_file "); ok {
			n, _ := strconv.ParseUint(v, 10, 64)
			if n < usage {
				usage -= n
			}
		}
	}
	return usage
}

// Scenario: memory pressure on containerd. memory.available is computed
// against a capacity 700Mi above the node's working set at the start, with
// a hard threshold of 250Mi: a best-effort pod holding 500Mi in a shell
// variable pushes it under the threshold and is evicted with the kubelet's
// status and event, while a guaranteed pod keeps running.
func TestMemoryHogEvictedOnContainerd(t *testing.T) {
	capacity := nodeWorkingSet(t) + 700<<20
	a := startAgent(t, agentOptions{args: []string{
		"--eviction-hard", "memory.available<250Mi",
		"--eviction-memory-capacity", strconv.FormatUint(capacity, 10),
		"--eviction-monitoring-interval", "500ms",
		"--eviction-pressure-transition-period", "20s",
	}})
	g := shPod("guaranteed", "sleep 3600")
	q, cpu := resource.MustParse("50Mi"), resource.MustParse("100m")
	g.Spec.Containers[0].Resources = v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceMemory: q, v1.ResourceCPU: cpu},
		Limits:   v1.ResourceList{v1.ResourceMemory: q, v1.ResourceCPU: cpu}}
	a.apply(t, g)
	a.waitPod(t, "guaranteed", 60*time.Second, func(p *v1.Pod) error {
		if p.Status.Phase != v1.PodRunning {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		return nil
	})
	a.apply(t, shPod("hog", `x=$(head -c 524288000 /dev/zero | tr '\0' a); sleep 3600`))
	hog := a.waitPod(t, "hog", 120*time.Second, func(p *v1.Pod) error {
		if p.Status.Phase != v1.PodFailed {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		return nil
	})
	if hog.Status.Reason != "Evicted" || !strings.HasPrefix(hog.Status.Message, "The node was low on resource: memory. Threshold quantity: 250Mi, available: ") {
		t.Fatalf("hog status = %q %q, want Evicted with the kubelet's message", hog.Status.Reason, hog.Status.Message)
	}
	var target *v1.PodCondition
	for i := range hog.Status.Conditions {
		if hog.Status.Conditions[i].Type == v1.DisruptionTarget {
			target = &hog.Status.Conditions[i]
		}
	}
	if target == nil || target.Reason != v1.PodReasonTerminationByKubelet {
		t.Fatalf("hog DisruptionTarget = %+v", target)
	}
	t.Logf("hog evicted: %s", hog.Status.Message)
	eventually(t, 15*time.Second, func() error {
		if s, msg := a.nodeCondition(t, v1.NodeMemoryPressure); s != v1.ConditionTrue {
			return fmt.Errorf("MemoryPressure %s %s", s, msg)
		}
		return nil
	})
	a.waitPod(t, "guaranteed", 10*time.Second, func(p *v1.Pod) error {
		if p.Status.Phase != v1.PodRunning {
			return fmt.Errorf("guaranteed pod after the eviction: phase %s", p.Status.Phase)
		}
		return nil
	})
}
