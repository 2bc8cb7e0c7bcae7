package main

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzSplitManifests: `actorletctl apply -f` on any file never panics;
// every document it returns is a pod, a ConfigMap or a Secret, or carries
// the error that says why not (a bad document never hides the others),
// and a decoded pod is never returned with its error unset unless valid.
// Seeds: multi-document manifests and the hostile payloads of the
// validation tests. `make fuzz` runs it briefly; explore with
// `go test -run=^$ -fuzz=FuzzSplitManifests ./cmd/actorletctl/`.
func FuzzSplitManifests(f *testing.F) {
	for _, s := range []string{
		"", "---\n", "---\n---\n", "null\n---\n{}\n",
		"kind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n---\nkind: Secret\nmetadata: {name: s}\nstringData: {p: q}\n---\nmetadata: {name: web}\nspec: {containers: [{name: c, image: i}]}\n",
		"metadata: {name: a}\nspec: {containers: [{name: c, image: i}]}\n---\nnot: [valid\n---\nmetadata: {name: b}\nspec: {containers: [{name: c, image: i}]}\n",
		"kind: Deployment\n",
		"a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n",
		strings.Repeat("[", 500) + strings.Repeat("]", 500),
		"metadata: {name: d}\nspec: {activeDeadlineSeconds: 9223372037, containers: [{name: c, image: i}]}\n",
		"\xff\xfe---\n\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := splitManifests("fuzz.yaml", bytes.NewReader(data))
		if err != nil {
			if ms != nil {
				t.Fatalf("manifests %v with error %v", ms, err)
			}
			return
		}
		if len(ms) == 0 {
			t.Fatal("no manifests and no error")
		}
		for i, m := range ms {
			switch {
			case m.err != nil:
			case m.pod != nil && m.obj == nil:
			case m.obj != nil && m.pod == nil && (m.obj.configMap != nil) != (m.obj.secret != nil):
			default:
				t.Fatalf("document %d (%s): pod %v obj %+v err %v", i, m.source, m.pod != nil, m.obj, m.err)
			}
			if m.source == "" {
				t.Fatalf("document %d has no source", i)
			}
		}
	})
}
