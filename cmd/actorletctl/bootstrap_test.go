package main

import (
	"context"
	"strings"
	"testing"

	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/messages/wire"
)

// TestBootstrapOnCluster: an operator bootstraps R3 buckets with a
// placement tag on a 3-server cluster; running it again changes nothing.
func TestBootstrapOnCluster(t *testing.T) {
	// Authenticated as docs/security.md sets a cluster up: bootstrap is the
	// operator's (admin credentials, found through ACTORLET_CREDS).
	cl := bustest.StartClusterWith(t, 3, bustest.ClusterOptions{Secure: true})
	t.Setenv("ACTORLET_CREDS", cl.AdminCreds())
	e := &env{t: t, url: cl.URL()}
	out := e.mustRun("bootstrap", "--replicas", "3")
	for _, name := range []string{wire.DesiredBucket, wire.StatusBucket, wire.NodesBucket, wire.ConfigMapsBucket, wire.SecretsBucket, wire.EventsStream} {
		if !strings.Contains(out, name) || !strings.Contains(out, "created") {
			t.Errorf("bootstrap output lacks %s created:\n%s", name, out)
		}
	}
	out = e.mustRun("bootstrap", "--replicas", "3")
	if strings.Count(out, "unchanged") != 6 || strings.Contains(out, "updated") {
		t.Errorf("second bootstrap changed something:\n%s", out)
	}
	conn := cl.Connect(t, "check")
	kv, err := conn.JS.KeyValue(context.Background(), wire.DesiredBucket)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Config().Replicas != 3 {
		t.Errorf("desired bucket has %d replicas, want 3", st.Config().Replicas)
	}
	for _, b := range []string{wire.ConfigMapsBucket, wire.SecretsBucket} {
		kv, err := conn.JS.KeyValue(context.Background(), b)
		if err != nil {
			t.Fatal(err)
		}
		if st, err := kv.Status(context.Background()); err != nil || st.Config().Replicas != 3 {
			t.Errorf("bucket %s after bootstrap --replicas 3: %v %v, want 3 replicas", b, st, err)
		}
	}
	// A node's credentials may not change the buckets.
	nodeCreds := cl.NodeCreds(t, "n1")
	if _, errOut, code := e.run(context.Background(), "", "--creds", nodeCreds, "--timeout", "1s", "bootstrap", "--replicas", "1"); code == 0 {
		t.Errorf("bootstrap with node credentials succeeded; want it refused (stderr %q)", errOut)
	}
	// A tag no server carries cannot be placed: the error says so.
	_, errOut, code := e.run(context.Background(), "", "bootstrap", "--replicas", "3", "--placement-tags", "gpu")
	if code == 0 || !strings.Contains(errOut, "actorlet_desired") {
		t.Errorf("bootstrap with an unplaceable tag: exit %d, stderr %q; want a failure naming the bucket", code, errOut)
	}
}

func TestBootstrapRejectsBadSettings(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--replicas", "0"}, "--replicas 0"},
		{[]string{"--replicas", "9"}, "replicas 9"},
		{[]string{"--placement-tags", strings.Repeat("t", 100)}, "placement tag"},
		{[]string{"extra"}, "no arguments"},
		{[]string{"--edge-nodes", "a>b"}, "edge node"},
	} {
		_, errOut, code := e.run(context.Background(), "", append([]string{"bootstrap"}, tc.args...)...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("bootstrap %v: exit %d, stderr %q; want %q", tc.args, code, errOut, tc.want)
		}
	}
}
