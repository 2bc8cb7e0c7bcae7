package fleet

import (
	"fmt"
	"os"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/node/agent"
	"github.com/actorlet/actorlet/test/testutil"
)

// testStaticPods: a manifest file in --pod-manifest-path runs as pod
// <name>-<node>, marked static; changing the file replaces the pod and
// removing it stops the pod.
func testStaticPods(t *testing.T, f *fleet) {
	manifests := t.TempDir()
	n := f.startNode(t, "st-n1", nil, func(c *agent.Config) { c.PodManifestPath = manifests })
	const podName = "sidecar-st-n1"
	file := testutil.WriteFile(t, manifests, "sidecar.yaml", podYAML("sidecar", "while true; do sleep 1; done",
		`    env: [{name: VERSION, value: "1"}]`))

	first := f.waitRunning(t, n.name, "default", podName)
	if first.Annotations["actorlet.io/static"] != "true" {
		t.Errorf("static pod annotations = %v, want actorlet.io/static=true", first.Annotations)
	}
	if table := f.mustCtl(t, "get", "pods", "--node", n.name); !lineHas(table, podName, "Running") {
		t.Errorf("get pods does not list %s Running:\n%s", podName, table)
	}

	testutil.WriteFile(t, manifests, "sidecar.yaml", podYAML("sidecar", "while true; do sleep 1; done",
		`    env: [{name: VERSION, value: "2"}]`))
	firstID := containerID(t, first, "app")
	second := f.waitPod(t, n.name, "default", podName, "replaced", func(p *v1.Pod) bool {
		return isRunning(p) && p.UID != first.UID && p.Spec.Containers[0].Env[0].Value == "2"
	})
	if containerID(t, second, "app") == firstID {
		t.Errorf("the changed static pod still runs container %s", firstID)
	}
	eventually(t, waitFor, func() error {
		if got := n.runningContainers("default", podName); len(got) != 1 {
			return fmt.Errorf("runtime runs %d containers of %s, want 1 (the old pod is gone)", len(got), podName)
		}
		if got := n.sandboxes("default", podName); len(got) != 1 || got[0].Metadata.Uid != string(second.UID) {
			return fmt.Errorf("runtime has sandboxes %v of %s, want only the new pod's", ids(got), podName)
		}
		return nil
	})

	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	f.waitGone(t, n.name, "default", podName)
	eventually(t, waitFor, func() error {
		if got := n.runningContainers("default", podName); len(got) != 0 {
			return fmt.Errorf("runtime still runs %d containers of the removed static pod", len(got))
		}
		return nil
	})
}
