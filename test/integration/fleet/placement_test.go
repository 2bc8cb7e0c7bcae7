package fleet

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/node/agent"
	"github.com/actorlet/actorlet/test/testutil"
)

// testPlacement: a fleet pod with required node affinity follows a live
// node's labels and taints: it waits on a node whose zone does not match,
// starts when the label changes, and is evicted by a NoExecute taint; a
// node registered with a NoSchedule taint (--register-with-taints) takes
// only pods that tolerate it.
func testPlacement(t *testing.T, f *fleet) {
	n := f.startNode(t, "aff-n1", map[string]string{"role": "aff", "zone": "b"}, nil)
	tainted := f.startNode(t, "aff-n2", map[string]string{"role": "aff-tainted"}, func(c *agent.Config) {
		c.RegisterWithTaints = []v1.Taint{{Key: "dedicated", Value: "ml", Effect: v1.TaintEffectNoSchedule}}
	})
	dir := t.TempDir()
	file := testutil.WriteFile(t, dir, "zoned.yaml", podYAML("zoned", "exec sleep 300", `  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - {key: zone, operator: In, values: [a]}`))
	f.mustCtl(t, "apply", "-f", file, "--selector", "role=aff")

	if r := f.ctl(t, "label", "node", n.name, "zone=a"); r.code == 0 || !strings.Contains(r.stderr, "--overwrite") {
		t.Errorf("label without --overwrite: %s", r)
	}
	f.mustCtl(t, "label", "node", n.name, "zone=a", "--overwrite")
	f.waitRunning(t, n.name, "default", "zoned")
	eventually(t, waitFor, func() error {
		if nodes := f.mustCtl(t, "get", "nodes", "-o", "json"); !strings.Contains(nodes, `"zone":"a"`) && !strings.Contains(nodes, `"zone": "a"`) {
			return fmt.Errorf("the node entry does not show zone=a yet")
		}
		return nil
	})
	f.mustCtl(t, "label", "node", n.name, "zone-")
	f.waitRunning(t, n.name, "default", "zoned") // IgnoredDuringExecution
	f.mustCtl(t, "taint", "node", n.name, "maint=now:NoExecute")
	f.waitGone(t, n.name, "default", "zoned")
	f.mustCtl(t, "taint", "node", n.name, "maint-")

	plain := testutil.WriteFile(t, dir, "plain.yaml", podYAML("plain", "exec sleep 300"))
	tolerant := testutil.WriteFile(t, dir, "tolerant.yaml", podYAML("tolerant", "exec sleep 300", `  tolerations:
  - {key: dedicated, operator: Equal, value: ml, effect: NoSchedule}`))
	f.mustCtl(t, "apply", "-f", plain, "--selector", "role=aff-tainted")
	f.mustCtl(t, "apply", "-f", tolerant, "--selector", "role=aff-tainted")
	f.waitRunning(t, tainted.name, "default", "tolerant")
	if p := f.getPod(t, tainted.name, "default", "plain"); p != nil {
		t.Errorf("a pod that does not tolerate the node's taint runs there: %s", testutil.PodSummary(p))
	}
	nodes := f.mustCtl(t, "get", "nodes", "-o", "json")
	if !strings.Contains(nodes, `"key":"dedicated"`) && !strings.Contains(nodes, `"key": "dedicated"`) {
		t.Errorf("the node entry does not publish its taint")
	}
	for _, p := range []string{"zoned", "plain", "tolerant"} {
		f.ctl(t, "delete", "pod", p, "--selector", "--now")
	}
}
