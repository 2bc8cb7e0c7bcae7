package fleet

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/test/testutil"
)

// testAdmission: what the node's process runtime cannot run is refused
// once, with the field and what to do — by `apply` before it writes, and
// by the node's admission for what reaches it anyway (a raw write) — and
// never retried as a container error; args-only pods whose program is on
// the node run. A node pod's nodeSelector is admitted against the labels
// an operator set at run time. A refused pod deleted gracefully is gone at
// once.
func testAdmission(t *testing.T, f *fleet) {
	n := f.startNode(t, "adm-n1", nil, nil)
	// apply --node reads the node's entry (its runtime) to refuse before
	// writing: wait for the first heartbeat, which a loaded machine delays.
	eventually(t, 30*time.Second, func() error {
		if !strings.Contains(f.mustCtl(t, "get", "nodes"), n.name) {
			return fmt.Errorf("node %s not registered yet", n.name)
		}
		return nil
	})
	dir := t.TempDir()
	pod := func(name, container string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
			"\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: app\n    image: busybox:1.36\n" + container
	}

	noCommand := testutil.WriteFile(t, dir, "no-command.yaml", pod("no-command", ""))
	r := f.ctl(t, "apply", "-f", noCommand, "--node", n.name)
	if r.code != 1 || !strings.Contains(r.stderr, "spec.containers[0].command: Required value") ||
		!strings.Contains(r.stderr, "no image entrypoint") || !strings.Contains(r.stderr, "--container-runtime-endpoint") {
		t.Errorf("apply of a pod without command: %s", r)
	}
	if f.hasKey(t, wire.DesiredNodeKey(n.name, "default", "no-command")) {
		t.Error("apply wrote the pod without command")
	}

	// Written around the CLI, as `nats kv put` would: the node refuses.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv := f.desired(t)
	raw := map[string]string{
		"no-command": pod("no-command", ""),
		"args-only":  pod("args-only", "    args: [\"tcp-listen:5432,fork\", \"tcp:db:5432\"]\n"),
	}
	for name, y := range raw {
		data, err := yaml.YAMLToJSON([]byte(y))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Put(ctx, wire.DesiredNodeKey(n.name, "default", name), data); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]string{"no-command": "no image entrypoint", "args-only": `args[0] "tcp-listen:5432,fork"`} {
		p := f.waitPod(t, n.name, "default", name, "refused", func(p *v1.Pod) bool {
			return p != nil && p.Status.Phase == v1.PodFailed && p.Status.Reason == "RuntimeUnsupported"
		})
		for _, w := range []string{"spec.containers[0].command", want, "--container-runtime-endpoint"} {
			if !strings.Contains(p.Status.Message, w) {
				t.Errorf("%s: status message %q lacks %q", name, p.Status.Message, w)
			}
		}
		if sb := n.sandboxes("default", name); len(sb) != 0 {
			t.Errorf("%s: refused at admission, yet %d sandboxes were created", name, len(sb))
		}
	}

	argsOK := testutil.WriteFile(t, dir, "args-ok.yaml", pod("args-ok", "    args: [\"sh\", \"-c\", \"sleep 600\"]\n"))
	f.mustCtl(t, "apply", "-f", argsOK, "--node", n.name)
	f.waitRunning(t, n.name, "default", "args-ok")

	// nodeSelector against labels set at run time (the Kubernetes docs'
	// "Assign Pods to Nodes" flow).
	ssd := func(name string) string {
		return testutil.WriteFile(t, dir, name+".yaml",
			pod(name, "    command: [\"sleep\", \"600\"]\n")+"  nodeSelector:\n    disktype: ssd\n")
	}
	f.mustCtl(t, "apply", "-f", ssd("ssd-before"), "--node", n.name)
	f.waitPod(t, n.name, "default", "ssd-before", "rejected", func(p *v1.Pod) bool {
		return p != nil && p.Status.Phase == v1.PodFailed && p.Status.Reason == "NodeAffinity"
	})
	f.mustCtl(t, "label", "node", n.name, "disktype=ssd")
	f.mustCtl(t, "apply", "-f", ssd("ssd-after"), "--node", n.name)
	f.waitRunning(t, n.name, "default", "ssd-after")
	// A refused pod deleted gracefully has nothing to stop: it goes at once.
	for _, name := range []string{"ssd-before", "no-command", "args-only"} {
		f.mustCtl(t, "delete", "pod", name, "--node", n.name)
	}
	for _, name := range []string{"ssd-before", "no-command", "args-only"} {
		f.waitGone(t, n.name, "default", name)
	}
	for _, name := range []string{"args-ok", "ssd-after"} {
		f.mustCtl(t, "delete", "pod", name, "--node", n.name)
	}
}
