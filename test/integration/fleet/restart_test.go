package fleet

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/test/testutil"
)

// testNodeOffline: a pod written for a node no agent runs yet starts when
// that node comes up.
func testNodeOffline(t *testing.T, f *fleet) {
	const nodeName = "off-n2"
	data, err := yaml.YAMLToJSON([]byte(podYAML("early", "while true; do sleep 1; done")))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := f.desired(t).Put(ctx, wire.DesiredNodeKey(nodeName, "default", "early"), data); err != nil {
		t.Fatalf("write the desired pod: %v", err)
	}
	n := f.startNode(t, nodeName, nil, nil)
	f.waitRunning(t, n.name, "default", "early")
	if got := n.runningContainers("default", "early"); len(got) != 1 {
		t.Errorf("runtime runs %d containers of early, want 1", len(got))
	}
}

// testAgentRestart: while an agent is down one pod is added and one
// deleted; the restarted agent rebuilds the desired set, and adopts the
// untouched pod without starting it again.
func testAgentRestart(t *testing.T, f *fleet) {
	n := f.startNode(t, "rs-n1", nil, nil)
	dir := t.TempDir()
	for _, name := range []string{"keep", "drop"} {
		file := testutil.WriteFile(t, dir, name+".yaml", podYAML(name, "while true; do sleep 1; done"))
		f.mustCtl(t, "apply", "-f", file, "--node", n.name)
	}
	keep := f.waitRunning(t, n.name, "default", "keep")
	f.waitRunning(t, n.name, "default", "drop")
	keepID := containerID(t, keep, "app")
	keepSandboxes := n.sandboxes("default", "keep")

	n.stop()
	file := testutil.WriteFile(t, dir, "added.yaml", podYAML("added", "while true; do sleep 1; done"))
	if out := f.mustCtl(t, "apply", "-f", file, "--node", n.name); !strings.Contains(out, "pod/added created") {
		t.Errorf("apply while the node is down: %q", out)
	}
	f.mustCtl(t, "delete", "pod", "drop", "--now", "--node", n.name)
	// Nothing acts while the agent is away: drop still runs.
	if got := n.runningContainers("default", "drop"); len(got) != 1 {
		t.Fatalf("with the agent stopped the runtime runs %d containers of drop, want 1", len(got))
	}

	n.start()
	f.waitRunning(t, n.name, "default", "added")
	f.waitGone(t, n.name, "default", "drop")
	eventually(t, waitFor, func() error {
		if got := n.runningContainers("default", "drop"); len(got) != 0 {
			return fmt.Errorf("runtime still runs %d containers of the deleted pod", len(got))
		}
		return nil
	})
	// Adopted: same container, same single sandbox, still running.
	keep = f.waitRunning(t, n.name, "default", "keep")
	if got := containerID(t, keep, "app"); got != keepID {
		t.Errorf("keep's container after the restart = %s, want the adopted %s", got, keepID)
	}
	if got := keep.Status.ContainerStatuses[0].RestartCount; got != 0 {
		t.Errorf("keep's restart count = %d, want 0", got)
	}
	sbs := n.sandboxes("default", "keep")
	if len(sbs) != 1 || len(keepSandboxes) != 1 || sbs[0].Id != keepSandboxes[0].Id {
		t.Errorf("keep has sandboxes %v after the restart, want only %v", ids(sbs), ids(keepSandboxes))
	}
	if got := n.runningContainers("default", "keep"); len(got) != 1 {
		t.Errorf("runtime runs %d containers of keep, want 1", len(got))
	}
	if got := n.sandboxes("default", "added"); len(got) != 1 {
		t.Errorf("added has %d sandboxes, want 1", len(got))
	}
}

func ids[T interface{ GetId() string }](xs []T) []string {
	var out []string
	for _, x := range xs {
		out = append(out, x.GetId())
	}
	return out
}
