package validation

import (
	"encoding/json"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// FuzzDecodePod checks that DecodePod never panics, and that whatever it
// accepts is a Pod that survives a JSON round trip and can be defaulted and
// validated without panicking. `go test` runs the seed corpus; explore with
// `go test -run=^$ -fuzz=FuzzDecodePod ./sources/validation/`.
func FuzzDecodePod(f *testing.F) {
	seeds := []string{
		"",
		"null",
		"42",
		"{}",
		"[]",
		`{"kind":"Pod"}`,
		`{"kind":"Deployment"}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`,
		"apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: c\n    image: nginx\n    livenessProbe:\n      httpGet: {port: 80}\n",
		`{"metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"i","resources":{"limits":{"cpu":"1"},"requests":{"cpu":"2"}}}]}}`,
		"{not: [valid",
		"metadata: &a\n  name: *a\n",
		"\xff\xfe",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pod, err := DecodePod(data)
		if err != nil {
			if pod != nil {
				t.Fatalf("DecodePod returned a pod with error %v", err)
			}
			return
		}
		if pod.Kind != "Pod" || pod.APIVersion != "v1" {
			t.Fatalf("accepted %s/%s", pod.APIVersion, pod.Kind)
		}
		raw, err := json.Marshal(pod)
		if err != nil {
			t.Fatalf("re-encode accepted pod: %v", err)
		}
		again, err := DecodePod(raw)
		if err != nil {
			t.Fatalf("re-decode accepted pod %s: %v", raw, err)
		}
		if !apiequality.Semantic.DeepEqual(pod, again) {
			t.Fatalf("round trip changed the pod:\n%#v\n%#v", pod, again)
		}
		SetDefaults(pod)
		_ = ValidatePod(pod)
	})
}
