package validation

import (
	"testing"

	"github.com/actorlet/actorlet/test/testutil"
)

func TestDecodePod(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		wantErr string
		check   func(t *testing.T, podName, image string)
	}{
		{
			name: "json",
			data: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`,
		},
		{
			name: "yaml",
			data: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: c\n    image: nginx\n",
		},
		{
			name: "type meta may be empty",
			data: `{"metadata":{"name":"web"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`,
		},
		{name: "empty", data: "  \n", wantErr: "payload is empty"},
		{name: "yaml null", data: "null", wantErr: "payload is empty"},
		{name: "garbage", data: "{not: [valid", wantErr: "payload is not JSON or YAML"},
		{name: "scalar", data: "42", wantErr: "payload is not a JSON or YAML object"},
		{name: "list", data: "- a\n- b\n", wantErr: "payload is not a JSON or YAML object"},
		{name: "wrong kind", data: `{"apiVersion":"apps/v1","kind":"Deployment"}`, wantErr: `kind is "Deployment", want Pod`},
		{name: "wrong version", data: `{"apiVersion":"v2","kind":"Pod"}`, wantErr: `apiVersion is "v2", want v1`},
		{name: "unknown field", data: `{"metadata":{"name":"web"},"spec":{"contianers":[]}}`, wantErr: `unknown field "contianers"`},
		{name: "bad quantity", data: `{"metadata":{"name":"web"},"spec":{"containers":[{"name":"c","image":"i","resources":{"limits":{"cpu":"lots"}}}]}}`, wantErr: "decode pod"},
		{name: "bad quantity names the field", data: `{"spec":{"containers":[{"name":"c","image":"i","resources":{"limits":{"cpu":"lots"}}}]}}`,
			wantErr: `spec.containers[0].resources.limits[cpu]: Invalid value: "lots"`},
		{name: "bad init container request", data: `{"spec":{"initContainers":[{"name":"i","image":"i"},{"name":"j","image":"i","resources":{"requests":{"memory":"1 GB"}}}]}}`,
			wantErr: `spec.initContainers[1].resources.requests[memory]: Invalid value: "1 GB"`},
		{name: "bad overhead and size limit", data: `{"spec":{"overhead":{"cpu":true},"volumes":[{"name":"v","emptyDir":{"sizeLimit":"big"}}]}}`,
			wantErr: `[spec.overhead[cpu]: Invalid value: "true": must be a quantity such as 500m, 2 or 1Gi, spec.volumes[0].emptyDir.sizeLimit: Invalid value: "big"`},
		{name: "wrong type", data: `{"metadata":{"name":5}}`, wantErr: "decode pod"},
		{name: "trailing data", data: `{"metadata":{"name":"a"}} {"x":1}`, wantErr: "trailing data"},
		{name: "unbalanced json", data: `{"metadata":{"name":"a"}}}`, wantErr: "trailing data"},
		{name: "flow-style yaml", data: "{apiVersion: v1, kind: Pod, metadata: {name: web}, spec: {containers: [{name: c, image: nginx}]}}\n"},
		{name: "flow-style yaml with trailing data", data: "{metadata: {name: web}} garbage", wantErr: "trailing data"},
		{name: "flow-style yaml, two values", data: "{metadata: {name: a}}\n{metadata: {name: b}}", wantErr: "trailing data"},
		{name: "broken flow-style yaml", data: "{metadata: {name: [a}}", wantErr: "invalid YAML"},
		{name: "two yaml documents", data: "metadata:\n  name: a\n---\nmetadata:\n  name: b\n", wantErr: "found 2"},
		{name: "leading document marker", data: "---\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: c\n    image: nginx\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod, err := DecodePod([]byte(tt.data))
			if testutil.WantError(t, err, tt.wantErr) {
				return
			}
			if pod.Kind != "Pod" || pod.APIVersion != "v1" {
				t.Errorf("type meta = %s/%s, want v1/Pod", pod.APIVersion, pod.Kind)
			}
			if pod.Name != "web" || len(pod.Spec.Containers) != 1 || pod.Spec.Containers[0].Image != "nginx" {
				t.Errorf("decoded pod = %+v", pod)
			}
		})
	}
}
