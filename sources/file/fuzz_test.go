package file

import (
	"strings"
	"testing"

	"github.com/actorlet/actorlet/messages"
)

// FuzzStaticPod: a manifest file's bytes (anyone who can write the
// manifest directory) never crash the file source; an accepted static pod
// is named <name>-<node>, bound to the node, marked as a file pod, and
// the same bytes give the same UID. Seeds: hostile manifests of the
// validation tests. `make fuzz` runs it briefly; explore with
// `go test -run=^$ -fuzz=FuzzStaticPod ./sources/file/`.
func FuzzStaticPod(f *testing.F) {
	for _, s := range []string{
		"", "null", "{}", "kind: Pod\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: c, image: busybox, command: [sleep, '300']}]\n",
		"metadata: {name: web, uid: fixed}\nspec: {containers: [{name: c, image: i}]}\n",
		"metadata: {name: web}\nspec: {activeDeadlineSeconds: 9223372037, containers: [{name: c, image: i}]}\n",
		"metadata: {name: ''}\nspec: {containers: [{name: c, image: i}]}\n",
		"metadata: {name: " + strings.Repeat("n", 300) + "}\nspec: {containers: [{name: c, image: i}]}\n",
		"a: &a [x, x]\nb: [*a, *a]\n",
		"---\nkind: Pod\n---\n",
	} {
		f.Add([]byte(s), "node-1")
	}
	f.Add([]byte("metadata: {name: web}\nspec: {containers: [{name: c, image: i}]}\n"), "N.Example.COM")
	f.Fuzz(func(t *testing.T, data []byte, node string) {
		pod, err := staticPod(data, node, "/etc/actorlet/manifests/fuzz.yaml")
		if err != nil {
			if pod != nil {
				t.Fatalf("a pod with error %v", err)
			}
			return
		}
		if !strings.HasSuffix(pod.Name, "-"+strings.ToLower(node)) || pod.Spec.NodeName != node || pod.UID == "" ||
			pod.Annotations[messages.ConfigSourceAnnotation] != messages.SourceFile {
			t.Fatalf("accepted static pod %s uid %q node %q annotations %v", pod.Name, pod.UID, pod.Spec.NodeName, pod.Annotations)
		}
		again, err := staticPod(data, node, "/etc/actorlet/manifests/fuzz.yaml")
		if err != nil || again.UID != pod.UID || again.Name != pod.Name {
			t.Fatalf("the same manifest gave %v, %v", again, err)
		}
	})
}
