package fleet

import (
	"fmt"
	"strings"
	"testing"

	"github.com/actorlet/actorlet/test/testutil"
)

// testFleetSelector: a fleet pod applied with --selector zone=a runs on
// exactly the two nodes labelled zone=a.
func testFleetSelector(t *testing.T, f *fleet) {
	a1 := f.startNode(t, "sel-a1", map[string]string{"zone": "a"}, nil)
	a2 := f.startNode(t, "sel-a2", map[string]string{"zone": "a"}, nil)
	b1 := f.startNode(t, "sel-b1", map[string]string{"zone": "b"}, nil)
	file := testutil.WriteFile(t, t.TempDir(), "zonal.yaml", podYAML("zonal", "while true; do sleep 1; done"))
	t.Cleanup(func() { f.ctl(t, "delete", "pod", "zonal", "--selector", "--now") })

	out := f.mustCtl(t, "apply", "-f", file, "--selector", "zone=a", "--wait", "--wait-timeout", "40s")
	if !strings.Contains(out, "pod/zonal created") {
		t.Errorf("apply output = %q", out)
	}
	for _, n := range []*node{a1, a2} {
		f.waitRunning(t, n.name, "default", "zonal")
		if got := n.runningContainers("default", "zonal"); len(got) != 1 {
			t.Errorf("%s runs %d containers of zonal, want 1", n.name, len(got))
		}
	}
	eventually(t, waitFor, func() error {
		wide := f.mustCtl(t, "get", "pods", "-A", "-o", "wide")
		var nodes []string
		for _, l := range strings.Split(wide, "\n") {
			if fs := strings.Fields(l); len(fs) > 1 && fs[0] == "default" && fs[1] == "zonal" {
				nodes = append(nodes, fs[len(fs)-1])
			}
		}
		if strings.Join(nodes, ",") != "sel-a1,sel-a2" {
			return fmt.Errorf("get pods -A -o wide shows zonal on %v, want sel-a1 and sel-a2:\n%s", nodes, wide)
		}
		return nil
	})
	if p := f.getPod(t, b1.name, "default", "zonal"); p != nil {
		t.Errorf("zonal has a status on the zone=b node: %s", testutil.PodSummary(p))
	}
	if got := b1.sandboxes("default", "zonal"); len(got) != 0 {
		t.Errorf("the zone=b node has %d sandboxes of zonal", len(got))
	}
}
