package fleet

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/actorlet/actorlet/node/agent"
	"github.com/actorlet/actorlet/test/testutil"
)

// testKubectlForms: the forms a kubectl user types work on a live node:
// get pod NAME (-o json|yaml|wide, one object) and get ... -o json (a
// List), kubectl's NotFound, apply refusing a manifest without apiVersion
// or kind, apply --wait waiting for what fits the pod (Ready, or Completed
// for a run-once pod) or what --for says, wait, delete -f FILE --wait with
// a line per object, and delete of a static pod naming its file.
func testKubectlForms(t *testing.T, f *fleet) {
	manifests := t.TempDir()
	n := f.startNode(t, "kf-n1", nil, func(c *agent.Config) { c.PodManifestPath = manifests })
	dir := t.TempDir()
	file := testutil.WriteFile(t, dir, "app.yaml", podYAML("kf-web", "while true; do sleep 1; done",
		`    readinessProbe: {exec: {command: ["true"]}, periodSeconds: 1}`)+"\n---\n"+`apiVersion: v1
kind: ConfigMap
metadata:
  name: kf-config
data:
  a: "1"
`)

	once := testutil.WriteFile(t, dir, "once.yaml", podYAML("kf-once", "echo done", "  restartPolicy: Never"))

	// apply --wait: the long-running pod until Ready, the run-once one
	// until Completed.
	out := f.mustCtl(t, "apply", "-f", file, "-f", once, "--node", n.name, "--wait", "--wait-timeout", "40s")
	for _, want := range []string{"configmap/kf-config created", "pod/kf-web created", "pod/kf-once created",
		"pod/kf-web: Running on kf-n1 - ready", "pod/kf-once: Completed on kf-n1 - completed"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply --wait output lacks %q:\n%s", want, out)
		}
	}
	// --for running on a pod that never becomes ready.
	unready := testutil.WriteFile(t, dir, "unready.yaml", podYAML("kf-unready", "while true; do sleep 1; done",
		`    readinessProbe: {exec: {command: ["false"]}, periodSeconds: 1}`))
	if out := f.mustCtl(t, "apply", "-f", unready, "--node", n.name, "--wait", "--for", "running", "--wait-timeout", "40s"); !strings.Contains(out, "pod/kf-unready: Running on kf-n1 - running") {
		t.Errorf("apply --wait --for running:\n%s", out)
	}
	if r := f.ctl(t, "wait", "pod/kf-unready", "--for", "condition=Ready", "--wait-timeout", "2s"); r.code != 1 || !strings.Contains(r.stderr, "timed out waiting for pods: kf-unready (not ready)") {
		t.Errorf("wait --for condition=Ready on an unready pod: %s", r)
	}
	if r := f.ctl(t, "wait", "pod", "kf-web", "kf-once", "--for", "running"); r.code != 0 {
		t.Errorf("wait pod kf-web kf-once --for running: %s", r)
	}

	// get pod NAME: one object with -o json|yaml, a row otherwise.
	var one v1.Pod
	if err := json.Unmarshal([]byte(f.mustCtl(t, "get", "pod", "kf-web", "-o", "json")), &one); err != nil || one.Name != "kf-web" || one.Kind != "Pod" {
		t.Errorf("get pod kf-web -o json: %v, %s/%s", err, one.Kind, one.Name)
	}
	if err := yaml.Unmarshal([]byte(f.mustCtl(t, "get", "pods/kf-web", "-o", "yaml")), &one); err != nil || one.Name != "kf-web" {
		t.Errorf("get pods/kf-web -o yaml: %v, %s", err, one.Name)
	}
	if wide := f.mustCtl(t, "get", "pods", "kf-web", "-o", "wide"); !lineHas(wide, "kf-web", "1/1", "Running", n.name) || strings.Contains(wide, "kf-once") {
		t.Errorf("get pods kf-web -o wide:\n%s", wide)
	}
	// get ... -o json: a List, for pods and ConfigMaps alike.
	for _, args := range [][]string{{"get", "pods", "--node", n.name, "-o", "json"}, {"get", "pods", "kf-web", "kf-once", "-o", "json"}, {"get", "configmaps", "-o", "json"}} {
		var list struct {
			Kind, APIVersion string
			Items            []struct{ Kind string }
		}
		out := f.mustCtl(t, args...)
		if err := json.Unmarshal([]byte(out), &list); err != nil || list.Kind != "List" || list.APIVersion != "v1" || len(list.Items) < 2 && args[1] != "configmaps" || len(list.Items) == 0 || list.Items[0].Kind == "" {
			t.Errorf("%v: not a List of typed items (%v):\n%s", args, err, out)
		}
	}
	var cm v1.ConfigMap
	if err := yaml.Unmarshal([]byte(f.mustCtl(t, "get", "cm", "kf-config", "-o", "yaml")), &cm); err != nil || cm.Data["a"] != "1" || cm.Kind != "ConfigMap" {
		t.Errorf("get cm kf-config -o yaml: %v, %+v", err, cm)
	}
	if r := f.ctl(t, "get", "pod", "kf-nope"); r.code != 1 || !strings.Contains(r.stderr, `Error from server (NotFound): pods "kf-nope" not found`) {
		t.Errorf("get pod kf-nope: %s", r)
	}

	// apply refuses a manifest without apiVersion or kind, as kubectl.
	bare := testutil.WriteFile(t, dir, "bare.yaml", "metadata:\n  name: kf-bare\nspec:\n  containers:\n  - name: app\n    image: busybox\n    command: [sleep, '60']\n")
	r := f.ctl(t, "apply", "-f", bare, "--node", n.name)
	if r.code != 1 || !strings.Contains(r.stderr, "error validating data: apiVersion not set (add apiVersion: v1); kind not set") {
		t.Errorf("apply without apiVersion and kind: %s", r)
	}
	if f.hasKey(t, "node.kf-n1.default.kf-bare") {
		t.Error("the manifest without apiVersion was stored")
	}

	// delete -f FILE --wait: every object, a line each, then each pod's
	// progress until it is gone. The run-once pod has finished: its
	// graceful delete ends as soon as its final status is published.
	f.mustCtl(t, "delete", "pod", "kf-once", "--wait", "--wait-timeout", "40s")
	out = f.mustCtl(t, "delete", "-f", file, "--wait", "--grace-period", "1", "--wait-timeout", "40s")
	for _, want := range []string{`pod "kf-web" deleted`, `configmap "kf-config" deleted`, "pod/kf-web: gone"} {
		if !strings.Contains(out, want) {
			t.Errorf("delete -f --wait output lacks %q:\n%s", want, out)
		}
	}
	if got := f.getPod(t, n.name, "default", "kf-web"); got != nil {
		t.Errorf("kf-web still has a status after delete --wait: %s", testutil.PodSummary(got))
	}
	f.ctl(t, "delete", "pod", "kf-unready", "--now")

	// A static pod: delete says which file to remove; its bare name hints
	// at the -<node> suffix.
	static := testutil.WriteFile(t, manifests, "ticker.yaml", podYAML("kf-ticker", "while true; do sleep 1; done"))
	f.mustCtl(t, "wait", "pod/kf-ticker-kf-n1", "--for", "running", "--wait-timeout", "40s")
	r = f.ctl(t, "delete", "pod", "kf-ticker-kf-n1")
	if r.code != 1 || !strings.Contains(r.stderr, "is a static pod: node kf-n1 runs it from the manifest file "+static+"; remove that file on the node") {
		t.Errorf("delete of a static pod: %s", r)
	}
	r = f.ctl(t, "delete", "pod", "kf-ticker")
	if r.code != 1 || !strings.Contains(r.stderr, "static pods are named <name>-<node>: did you mean kf-ticker-kf-n1?") {
		t.Errorf("delete of a static pod by its manifest's name: %s", r)
	}
	if r := f.ctl(t, "logs", "kf-ticker"); r.code != 1 || !strings.Contains(r.stderr, "did you mean kf-ticker-kf-n1?") {
		t.Errorf("logs of a static pod by its manifest's name: %s", r)
	}
	if err := os.Remove(static); err != nil {
		t.Fatal(err)
	}
	if out := f.mustCtl(t, "wait", "pod/kf-ticker-kf-n1", "--for", "delete", "--wait-timeout", "40s"); !strings.Contains(out, "pod/kf-ticker-kf-n1: gone") {
		t.Errorf("wait --for delete:\n%s", out)
	}
}
