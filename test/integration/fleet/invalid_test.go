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
)

// testInvalidPayloads: raw writes to the desired bucket, as `nats kv put`
// would make them. Each bad one is reported to the operator (a
// FailedValidation status naming what is wrong, and an event); the good
// ones written in the same burst all run.
func testInvalidPayloads(t *testing.T, f *fleet) {
	n := f.startNode(t, "inv-n1", nil, nil)
	good, err := yaml.YAMLToJSON([]byte(podYAML("placeholder", "while true; do sleep 1; done")))
	if err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		name, value string
		want        []string // in the status message and the event
	}{
		{"not-json", `{"metadata": {"name": `, []string{"not JSON or YAML"}},
		{"not-a-pod", `{"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 2}}`, []string{`kind is "Deployment"`}},
		{"dup-names", `{"spec": {"containers": [{"name": "app", "image": "busybox", "command": ["sleep", "60"]},
			{"name": "app", "image": "busybox", "command": ["sleep", "60"]}]}}`, []string{"spec.containers[1].name", "Duplicate value"}},
		{"no-image", `{"spec": {"containers": [{"name": "app", "command": ["sleep", "60"]}]}}`, []string{"spec.containers[0].image", "Required value"}},
		{"bad-quantity", `{"spec": {"containers": [{"name": "app", "image": "busybox", "command": ["sleep", "60"],
			"resources": {"limits": {"cpu": "lots"}}}]}}`, []string{"spec.containers[0].resources.limits[cpu]", "lots"}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv := f.desired(t)
	goodNames := []string{"good-a", "good-b", "good-c"}
	// One burst, good and bad interleaved.
	for i, b := range bad {
		if _, err := kv.Put(ctx, wire.DesiredNodeKey(n.name, "default", b.name), []byte(b.value)); err != nil {
			t.Fatal(err)
		}
		if i < len(goodNames) {
			value := strings.Replace(string(good), "placeholder", goodNames[i], 1)
			if _, err := kv.Put(ctx, wire.DesiredNodeKey(n.name, "default", goodNames[i]), []byte(value)); err != nil {
				t.Fatal(err)
			}
		}
	}

	for _, name := range goodNames {
		f.waitRunning(t, n.name, "default", name)
	}
	for _, b := range bad {
		p := f.waitPod(t, n.name, "default", b.name, "FailedValidation", func(p *v1.Pod) bool {
			return p != nil && p.Status.Phase == v1.PodFailed && p.Status.Reason == "FailedValidation"
		})
		for _, w := range b.want {
			if !strings.Contains(p.Status.Message, w) {
				t.Errorf("%s: status message %q does not contain %q", b.name, p.Status.Message, w)
			}
		}
	}
	table := f.mustCtl(t, "get", "pods", "--node", n.name)
	for _, b := range bad {
		if !lineHas(table, b.name, "FailedValidation") {
			t.Errorf("get pods does not show %s as FailedValidation:\n%s", b.name, table)
		}
	}
	eventually(t, waitFor, func() error {
		events := f.mustCtl(t, "events", "--node", n.name)
		for _, b := range bad {
			if !eventHas(events, "FailedValidation", b.want...) {
				return fmt.Errorf("no FailedValidation event for %s with %q:\n%s", b.name, b.want, events)
			}
		}
		return nil
	})
	for _, b := range bad {
		if got := n.sandboxes("default", b.name); len(got) != 0 {
			t.Errorf("%s: the runtime has %d sandboxes of a rejected pod", b.name, len(got))
		}
	}
}

// eventHas reports whether a line of `actorletctl events` has reason and
// every one of words.
func eventHas(events, reason string, words ...string) bool {
	for _, l := range strings.Split(events, "\n") {
		if !strings.Contains(l, reason) {
			continue
		}
		ok := true
		for _, w := range words {
			ok = ok && strings.Contains(l, w)
		}
		if ok {
			return true
		}
	}
	return false
}
