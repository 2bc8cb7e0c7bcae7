package wire

import (
	"strings"
	"testing"
)

// FuzzDesiredKey: ParseDesiredKey and ParseObjectKey (desired, ConfigMap
// and Secret keys: outside input read from the buckets) never panic, and a
// key they accept is given back unchanged by String. Seeds: the cases of
// TestParseDesiredKey. `make fuzz` runs it briefly; explore with
// `go test -run=^$ -fuzz=FuzzDesiredKey ./messages/wire/`.
func FuzzDesiredKey(f *testing.F) {
	for _, k := range []string{"node.mynode.default.web", "node.n1_example_com.kube-system.web_v2", "fleet.default.agent",
		"node.mynode.default", "node.mynode.default.web.extra", "fleet.default", "pods.default.web", "node..default.web",
		"", ".", "node.", "fleet..", "node.*.>.x", "fleet.a.b\x00", "node.é.ü.ß"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		k, err := ParseDesiredKey(key)
		ok, oerr := ParseObjectKey(key)
		if (err == nil) != (oerr == nil) || k != ok {
			t.Fatalf("desired and object keys disagree on %q: %+v %v / %+v %v", key, k, err, ok, oerr)
		}
		if err != nil {
			if !strings.Contains(err.Error(), "desired key") {
				t.Fatalf("error %q does not say what was wrong", err)
			}
			return
		}
		if k.String() != key {
			t.Fatalf("ParseDesiredKey(%q) = %+v, String() = %q", key, k, k.String())
		}
		if k.Namespace == "" || k.Name == "" || (!k.Fleet && k.Node == "") {
			t.Fatalf("accepted %q with an empty part: %+v", key, k)
		}
	})
}

// FuzzNameEncoding: a name (node, namespace or pod name: `.` allowed,
// `_` never, in a valid Kubernetes name) becomes one key token and comes
// back unchanged; keys built from names parse back to them.
func FuzzNameEncoding(f *testing.F) {
	for _, n := range []string{"web", "n1.example.com", "web.v2", "a", "..", "a_b", "", "x.y.z."} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, name string) {
		tok := EncodeName(name)
		if strings.Contains(tok, ".") {
			t.Fatalf("EncodeName(%q) = %q holds a token separator", name, tok)
		}
		if strings.Contains(name, "_") || name == "" {
			return // not a Kubernetes name: no promise
		}
		if got := DecodeName(tok); got != name {
			t.Fatalf("DecodeName(EncodeName(%q)) = %q", name, got)
		}
		k, err := ParseDesiredKey(DesiredNodeKey(name, name, name))
		if err != nil || k.Node != name || k.Namespace != name || k.Name != name {
			t.Fatalf("node key of %q parses to %+v, %v", name, k, err)
		}
		k, err = ParseDesiredKey(DesiredFleetKey(name, name))
		if err != nil || !k.Fleet || k.Namespace != name || k.Name != name {
			t.Fatalf("fleet key of %q parses to %+v, %v", name, k, err)
		}
	})
}
