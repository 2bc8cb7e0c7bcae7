package validation

import (
	"encoding/json"
	"strings"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// FuzzDecodePod checks that DecodePod never panics, and that whatever it
// accepts is a Pod that survives a JSON round trip and can be defaulted and
// validated without panicking. `go test` runs the seed corpus; explore with
// `go test -run=^$ -fuzz=FuzzDecodePod ./messages/validation/`.
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
	seeds = append(seeds, hostileSeeds...)
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

// hostileSeeds are the hostile payloads of the limit and validation tests
// (and of issue 20): nesting, aliases, overflowing durations, huge and
// negative values, too many containers.
var hostileSeeds = []string{
	strings.Repeat("[", 1000) + strings.Repeat("]", 1000),
	"a: &a [x, x, x, x]\nb: &b [*a, *a, *a, *a]\nc: &c [*b, *b, *b, *b]\nd: [*c, *c, *c, *c]\n",
	`{"metadata":{"name":"d"},"spec":{"activeDeadlineSeconds":9223372037,"terminationGracePeriodSeconds":9223372036854775807,"containers":[{"name":"c","image":"i"}]}}`,
	`{"metadata":{"name":"t"},"spec":{"tolerations":[{"key":"k","operator":"Exists","effect":"NoExecute","tolerationSeconds":18446744074}],"containers":[{"name":"c","image":"i"}]}}`,
	`{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i","livenessProbe":{"exec":{"command":["x"]},"periodSeconds":-1,"timeoutSeconds":2147483647}}]}}`,
	`{"metadata":{"name":"n","deletionGracePeriodSeconds":-5},"spec":{"containers":[{"name":"c","image":"i","command":["/x-$(P)"],"env":[{"name":"P","valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}]}]}}`,
	`{"metadata":{"name":"v"},"spec":{"volumes":[{"name":"s","secret":{"secretName":"s","items":[{"key":"k","path":"a/../b"}]}}],"containers":[{"name":"c","image":"i"}]}}`,
	`{"metadata":{"name":"big"},"spec":{"containers":[{"name":"c","image":"i","resources":{"limits":{"memory":"99999999999999999999999Ei"}}}]}}`,
	`{"metadata":{"name":"unknown"},"spec":{"containerz":[]}}`,
}

// FuzzDecodeObjects: Kind, DecodeConfigMap and DecodeSecret (the
// documents of a manifest and the values of the ConfigMap and Secret
// buckets) never panic; what they accept validates, and is of its kind.
func FuzzDecodeObjects(f *testing.F) {
	for _, s := range []string{
		"", "null", "{}", `{"kind":"ConfigMap"}`, `{"kind":"Secret"}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"b"},"binaryData":{"x":"AAE="}}`,
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {password: pw}\ndata: {k: aGk=}\n",
		`{"kind":"Secret","metadata":{"name":"s"},"data":{"k":"not base64!"}}`,
		`{"kind":"ConfigMap","metadata":{"name":"c"},"data":{"../x":"y","a":"b"},"binaryData":{"a":"AA=="}}`,
		`{"kind":"Secret","metadata":{"name":"UPPER"},"type":"kubernetes.io/tls"}`,
	} {
		f.Add([]byte(s))
	}
	for _, s := range hostileSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		kind, err := Kind(data)
		if err != nil {
			return
		}
		switch kind {
		case "ConfigMap":
			cm, err := DecodeConfigMap(data)
			if err == nil && (cm == nil || ValidateConfigMap(cm) != nil) {
				t.Fatalf("accepted an invalid ConfigMap: %+v", cm)
			}
		case "Secret":
			s, err := DecodeSecret(data)
			if err == nil && (s == nil || ValidateSecret(s) != nil) {
				t.Fatalf("accepted an invalid Secret: %+v", s)
			}
		}
		if _, err := DecodeConfigMap(data); err == nil && kind != "ConfigMap" {
			t.Fatalf("DecodeConfigMap accepted kind %q", kind)
		}
		if _, err := DecodeSecret(data); err == nil && kind != "Secret" {
			t.Fatalf("DecodeSecret accepted kind %q", kind)
		}
	})
}
