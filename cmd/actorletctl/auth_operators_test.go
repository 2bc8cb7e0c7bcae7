package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/messages/wire/busauth"
)

const teamPod = `apiVersion: v1
kind: Pod
metadata: {name: web, namespace: %NS%}
spec: {containers: [{name: app, image: busybox}]}
`

// TestAuthAddOperatorScoped issues a team-a operator with actorletctl,
// uses it through actorletctl on a server configured as docs/security.md
// says, and revokes it live.
func TestAuthAddOperatorScoped(t *testing.T) {
	srv := bustest.StartServer(t, bustest.ServerOptions{Secure: true})
	admin := bustest.ConnectWithProtocol(t, srv)
	dir := srv.Auth.Dir
	run := func(creds, stdin string, args ...string) (string, string, int) {
		var out, errOut bytes.Buffer
		c := &cli{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errOut, clock: testclock.NewFakeClock(now)}
		code := c.main(context.Background(), append([]string{"--server", srv.ClientURL(), "--timeout", "3s", "--creds", creds}, args...))
		return out.String(), errOut.String(), code
	}
	out, errOut, code := run(srv.AdminCreds(), "", "auth", "add-operator", "alice", "--namespace", "team-a", "--auth-dir", dir)
	alice := filepath.Join(dir, busauth.OperatorsDir, "alice.creds")
	if code != 0 || !strings.Contains(out, alice) {
		t.Fatalf("add-operator: exit %d, %s%s", code, out, errOut)
	}
	for _, bad := range [][]string{{"alice.b"}, {"Bob"}, {"carol", "--namespace", "Team_A"}} {
		if _, errOut, code := run(srv.AdminCreds(), "", append([]string{"auth", "add-operator", "--auth-dir", dir}, bad...)...); code == 0 || !strings.Contains(errOut, "must") && !strings.Contains(errOut, "RFC 1123") {
			t.Errorf("add-operator %v: exit %d, %q; want a refusal naming the rule", bad, code, errOut)
		}
	}

	// Its namespace: apply, read back, list.
	if out, errOut, code := run(alice, strings.ReplaceAll(teamPod, "%NS%", "team-a"), "apply", "-f", "-", "--node", "n1"); code != 0 {
		t.Fatalf("alice applies a team-a pod: exit %d, %s%s", code, out, errOut)
	}
	if _, err := admin.JS.Publish(context.Background(), "$KV."+wire.StatusBucket+"."+wire.StatusKey("n1", "team-a", "web"), []byte(`{"metadata":{"name":"web","namespace":"team-a"}}`)); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := run(alice, "", "get", "pods", "-n", "team-a"); code != 0 || !strings.Contains(out, "web") {
		t.Fatalf("alice lists team-a: exit %d, %s%s", code, out, errOut)
	}
	if out, errOut, code := run(alice, "", "get", "nodes"); code != 0 {
		t.Fatalf("alice lists nodes: exit %d, %s%s", code, out, errOut)
	}
	// Waits in its namespace (a watch of its namespace's statuses only):
	// for a state, and for a pod to be gone.
	running := `{"metadata":{"name":"web","namespace":"team-a"},"status":{"phase":"Running","containerStatuses":[{"name":"c","ready":true,"started":true,"state":{"running":{}}}]}}`
	if _, err := admin.JS.Publish(context.Background(), "$KV."+wire.StatusBucket+"."+wire.StatusKey("n1", "team-a", "web"), []byte(running)); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"wait", "pod", "web", "-n", "team-a", "--for", "running", "--wait-timeout", "5s"},
		{"wait", "pod", "web", "-n", "team-a", "--node", "n1", "--for", "running", "--wait-timeout", "5s"},
		{"wait", "pod", "never-made", "-n", "team-a", "--for", "delete", "--wait-timeout", "5s"},
	} {
		if out, errOut, code := run(alice, "", args...); code != 0 {
			t.Fatalf("alice: %v: exit %d, %s%s", args, code, out, errOut)
		}
	}
	for ns, reason := range map[string]string{"team-a": "SeenByAlice", "team-b": "HiddenFromAlice"} {
		ev := fmt.Sprintf(`{"metadata":{"name":"web.1","namespace":%q},"involvedObject":{"kind":"Pod","namespace":%q,"name":"web"},"reason":%q,"type":"Normal","message":"m"}`, ns, ns, reason)
		if _, err := admin.JS.Publish(context.Background(), wire.EventSubject("n1", ns, "web"), []byte(ev)); err != nil {
			t.Fatal(err)
		}
	}
	if out, errOut, code := run(alice, "", "events", "-n", "team-a"); code != 0 || !strings.Contains(out, "SeenByAlice") || strings.Contains(out, "HiddenFromAlice") {
		t.Fatalf("alice's team-a events: exit %d, %s%s", code, out, errOut)
	}
	if _, _, code := run(alice, "", "events", "-n", "team-b"); code == 0 {
		t.Error("alice read team-b's events")
	}
	// A read-only operator of team-a: reads, never writes.
	out, errOut, code = run(srv.AdminCreds(), "", "auth", "add-operator", "audit", "--namespace", "team-a", "--read-only", "--auth-dir", dir)
	if code != 0 || !strings.Contains(out, "read-only") {
		t.Fatalf("add-operator --read-only: exit %d, %s%s", code, out, errOut)
	}
	audit := filepath.Join(dir, busauth.OperatorsDir, "audit.creds")
	if out, errOut, code := run(audit, "", "get", "pods", "-n", "team-a"); code != 0 || !strings.Contains(out, "web") {
		t.Fatalf("audit lists team-a: exit %d, %s%s", code, out, errOut)
	}
	other := strings.ReplaceAll(strings.ReplaceAll(teamPod, "%NS%", "team-a"), "name: web", "name: audited")
	if _, errOut, code := run(audit, other, "apply", "-f", "-", "--node", "n1"); code == 0 || !strings.Contains(errOut, "refused this for your credentials") {
		t.Fatalf("audit applied a pod: exit %d, %s", code, errOut)
	}
	// Another namespace: refused by the server, nothing written.
	if out, errOut, code := run(alice, strings.ReplaceAll(teamPod, "%NS%", "team-b"), "apply", "-f", "-", "--node", "n1"); code == 0 {
		t.Fatalf("alice applied a team-b pod: %s%s", out, errOut)
	} else if !strings.Contains(errOut, `refused this for your credentials: Permissions Violation for Publish to "$JS.API.DIRECT.GET`) {
		t.Errorf("apply of a team-b pod: %q, want the refusal explained", errOut)
	}
	kv, err := admin.JS.KeyValue(context.Background(), wire.DesiredBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(context.Background(), wire.DesiredNodeKey("n1", "team-b", "web")); err == nil {
		t.Fatal("a team-b key exists after alice's refused apply")
	}
	if _, errOut, code := run(alice, "", "get", "pods", "-A"); code == 0 {
		t.Error("alice listed every namespace")
	} else if !strings.Contains(errOut, "the bus refused this for your credentials") {
		t.Errorf("get pods -A: %q, want the refusal explained", errOut)
	}

	// Deletes in its namespace, naming the node or not (the pod's key is
	// then found among the registered nodes').
	nodes, err := admin.JS.KeyValue(context.Background(), wire.NodesBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nodes.Put(context.Background(), "n1", []byte(`{"metadata":{"name":"n1"}}`)); err != nil {
		t.Fatal(err)
	}
	second := strings.ReplaceAll(strings.ReplaceAll(teamPod, "%NS%", "team-a"), "name: web", "name: second")
	if out, errOut, code := run(alice, second, "apply", "-f", "-", "--node", "n1"); code != 0 {
		t.Fatalf("alice applies a second team-a pod: exit %d, %s%s", code, out, errOut)
	}
	for _, args := range [][]string{
		{"delete", "pod", "second", "-n", "team-a"},
		{"delete", "pod", "web", "-n", "team-a", "--node", "n1"},
	} {
		if out, errOut, code := run(alice, "", args...); code != 0 {
			t.Fatalf("alice: %v: exit %d, %s%s", args, code, out, errOut)
		}
	}
	for _, name := range []string{"web", "second"} {
		// A graceful deletion: the node removes the key once the pod is
		// gone.
		e, err := kv.Get(context.Background(), wire.DesiredNodeKey("n1", "team-a", name))
		if err != nil {
			t.Fatal(err)
		}
		var p v1.Pod
		if err := json.Unmarshal(e.Value(), &p); err != nil || p.DeletionTimestamp == nil {
			t.Errorf("team-a/%s not marked deleted after alice deleted it: %v %s", name, err, e.Value())
		}
	}

	// Revoked: cut off at once.
	if out, errOut, code := run(srv.AdminCreds(), "", "auth", "revoke-operator", "alice", "--auth-dir", dir, "--sys-creds", srv.SystemCreds()); code != 0 || !strings.Contains(out, "revoked") {
		t.Fatalf("revoke-operator: exit %d, %s%s", code, out, errOut)
	}
	if _, errOut, code := run(alice, "", "get", "pods", "-n", "team-a"); code == 0 || !strings.Contains(errOut, "uthorization") {
		t.Fatalf("alice after revocation: exit %d, %q; want an authorization error", code, errOut)
	}
}

// TestNodeAddEdge provisions an edge node: the hub's consumers its copies
// read, and uplink credentials pinned to its own subjects.
func TestNodeAddEdge(t *testing.T) {
	srv := bustest.StartServer(t, bustest.ServerOptions{Secure: true})
	admin := bustest.ConnectWithProtocol(t, srv)
	var out, errOut bytes.Buffer
	for range 2 { // the second finds everything in place
		out.Reset()
		c := &cli{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, clock: testclock.NewFakeClock(now)}
		if code := c.main(context.Background(), []string{"--server", srv.ClientURL(), "--timeout", "5s", "--creds", srv.AdminCreds(),
			"node", "add", "e5", "--edge", "--auth-dir", srv.Auth.Dir}); code != 0 {
			t.Fatalf("node add --edge: exit %d, %s%s", code, out.String(), errOut.String())
		}
	}
	if p := srv.Auth.EdgeUplinkCredsPath("e5"); !strings.Contains(out.String(), p) {
		t.Fatalf("output %q does not name %s", out.String(), p)
	}
	for stream, want := range busauth.EdgeConsumers("e5") {
		cons, err := admin.JS.PushConsumer(context.Background(), stream, want.Durable)
		if err != nil || cons.CachedInfo().Config.DeliverSubject != want.DeliverSubject {
			t.Fatalf("hub consumer %s on %s: %v", want.Durable, stream, err)
		}
	}
}
