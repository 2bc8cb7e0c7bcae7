package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/test/testutil"
)

// apply -f takes ConfigMaps and Secrets as kubectl does (multi-document,
// stringData), writes them fleet-wide or for one node, and get / delete
// work on them; a Secret's value is never printed by apply or get.
func TestApplyGetDeleteObjects(t *testing.T) {
	e := newEnv(t)
	file := filepath.Join(t.TempDir(), "objs.yaml")
	if err := os.WriteFile(file, []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: app
data:
  greeting: hello
---
apiVersion: v1
kind: Secret
metadata:
  name: db
stringData:
  password: hunter2-very-secret
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: Bad_Name
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := e.run(context.Background(), "", "apply", "-f", file)
	if code == 0 || !strings.Contains(out, "configmap/app created") || !strings.Contains(out, "secret/db created") ||
		!strings.Contains(errOut, "metadata.name") || !strings.Contains(errOut, "1 of 3 objects not applied") {
		t.Fatalf("apply: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	en, err := e.kv(wire.SecretsBucket).Get(context.Background(), wire.ObjectFleetKey("default", "db"))
	if err != nil {
		t.Fatal(err)
	}
	var s v1.Secret
	if err := json.Unmarshal(en.Value(), &s); err != nil || string(s.Data["password"]) != "hunter2-very-secret" || s.StringData != nil || s.Type != v1.SecretTypeOpaque || s.UID == "" {
		t.Fatalf("stored secret: %+v %v", s, err)
	}
	e.run(context.Background(), "", "apply", "-f", file, "--node", "n1") // fails again for Bad_Name only
	if _, err := e.kv(wire.ConfigMapsBucket).Get(context.Background(), wire.ObjectNodeKey("n1", "default", "app")); err != nil {
		t.Fatalf("node-scoped configmap: %v", err)
	}
	if _, errOut, _ := e.run(context.Background(), "", "apply", "-f", file); !strings.Contains(errOut, "also exists for node(s) n1") {
		t.Errorf("no warning that the node-scoped copy wins:\n%s", errOut)
	}
	table := e.mustRun("get", "secrets")
	if !strings.Contains(table, "db") || !strings.Contains(table, "Opaque") || strings.Contains(table, "hunter2") {
		t.Errorf("get secrets:\n%s", table)
	}
	if table := e.mustRun("get", "configmaps"); !strings.Contains(table, "fleet") || !strings.Contains(table, "n1") {
		t.Errorf("get configmaps:\n%s", table)
	}
	if out := e.mustRun("delete", "configmap", "app", "--node", "n1"); !strings.Contains(out, `configmap "app" deleted`) {
		t.Errorf("delete: %s", out)
	}
	if _, _, code := e.run(context.Background(), "", "delete", "secret", "nope"); code == 0 {
		t.Error("deleting a missing secret succeeded")
	}
}

// A Secret over 1 MiB is refused before it reaches the bus, without
// echoing its value.
func TestApplyObjectTooLarge(t *testing.T) {
	e := newEnv(t)
	big := strings.Repeat("a", 1<<20+1)
	out, errOut, code := e.run(context.Background(), "apiVersion: v1\nkind: Secret\nmetadata: {name: big}\nstringData: {k: "+big+"}\n", "apply", "-f", "-")
	if code == 0 || !strings.Contains(errOut, "over the limit of 1048576 bytes") || strings.Contains(errOut, "aaaa") {
		t.Fatalf("exit %d\nstdout %s\nstderr %.300s", code, out, errOut)
	}
}

// An immutable ConfigMap or Secret is refused a change of its data with
// the API server's message; applying it unchanged is fine, deleting it is
// allowed, and after a delete it can be applied anew.
func TestApplyImmutableObjects(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	write := func(value string) string {
		return testutil.WriteFile(t, dir, "objs.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: frozen\nimmutable: true\ndata:\n  tier: "+value+"\n"+
			"---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: frozen\nimmutable: true\nstringData:\n  key: "+value+"-secret\n")
	}
	e.mustRun("apply", "-f", write("gold"))
	if out := e.mustRun("apply", "-f", write("gold")); !strings.Contains(out, "configmap/frozen unchanged") || !strings.Contains(out, "secret/frozen unchanged") {
		t.Errorf("re-apply unchanged: %s", out)
	}
	_, errOut, code := e.run(context.Background(), "", "apply", "-f", write("platinum"))
	if code != 1 || !strings.Contains(errOut, "ConfigMap \"frozen\" is invalid: data: Forbidden: field is immutable when `immutable` is set") ||
		!strings.Contains(errOut, "Secret \"frozen\" is invalid: data: Forbidden: field is immutable when `immutable` is set") ||
		strings.Contains(errOut, "platinum-secret") || strings.Contains(errOut, "gold-secret") {
		t.Fatalf("changing immutable objects: exit %d, stderr %s", code, errOut)
	}
	en, err := e.kv(wire.ConfigMapsBucket).Get(context.Background(), wire.ObjectFleetKey("default", "frozen"))
	if err != nil || !strings.Contains(string(en.Value()), `"tier":"gold"`) {
		t.Fatalf("stored ConfigMap after the refused change: %s %v", en.Value(), err)
	}
	e.mustRun("delete", "configmap", "frozen")
	e.mustRun("delete", "secret", "frozen")
	if out := e.mustRun("apply", "-f", write("platinum")); !strings.Contains(out, "configmap/frozen created") {
		t.Errorf("apply after delete: %s", out)
	}
}
