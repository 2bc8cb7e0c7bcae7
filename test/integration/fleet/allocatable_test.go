package fleet

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/node/agent"
	"github.com/actorlet/actorlet/test/testutil"
)

// testAllocatable: a node's admission checks requests against Allocatable
// (Capacity minus --system-reserved, --kube-reserved and the hard eviction
// threshold), as the kubelet's: a pod that fits the machine's CPUs but not
// what is left after the reservations is refused OutOfcpu; a small one
// runs.
func testAllocatable(t *testing.T, f *fleet) {
	// Everything but 100m of the machine's CPUs is reserved.
	reserved := fmt.Sprintf("cpu=%dm", runtime.NumCPU()*1000-100)
	n := f.startNode(t, "alloc-n1", nil, func(c *agent.Config) { c.SystemReserved = reserved; c.KubeReserved = "memory=64Mi" })
	dir := t.TempDir()
	withCPU := func(name, cpu string) string {
		return testutil.WriteFile(t, dir, name+".yaml", podYAML(name, "sleep 600",
			"    resources:\n      requests:\n        cpu: "+cpu))
	}
	f.mustCtl(t, "apply", "-f", withCPU("fits-capacity", "500m"), "--node", n.name)
	p := f.waitPod(t, n.name, "default", "fits-capacity", "refused", func(p *v1.Pod) bool {
		return p != nil && p.Status.Phase == v1.PodFailed
	})
	if p.Status.Reason != "OutOfcpu" || !strings.Contains(p.Status.Message, "cpu") {
		t.Errorf("a pod over Allocatable: reason %q message %q, want OutOfcpu", p.Status.Reason, p.Status.Message)
	}
	if sb := n.sandboxes("default", "fits-capacity"); len(sb) != 0 {
		t.Errorf("refused at admission, yet %d sandboxes were created", len(sb))
	}
	f.mustCtl(t, "apply", "-f", withCPU("fits-allocatable", "50m"), "--node", n.name)
	f.waitRunning(t, n.name, "default", "fits-allocatable")
	out := f.mustCtl(t, "get", "nodes", "-o", "json")
	if !strings.Contains(out, `"allocatable"`) || !strings.Contains(out, `"cpu": "100m"`) {
		t.Errorf("node record lacks allocatable cpu 100m:\n%s", out)
	}
	for _, name := range []string{"fits-capacity", "fits-allocatable"} {
		f.mustCtl(t, "delete", "pod", name, "--node", n.name)
	}
}
