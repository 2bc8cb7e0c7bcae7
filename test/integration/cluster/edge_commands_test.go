package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/test/testenv"
)

// TestEdgeCommandsThroughUplink: the hub's operator runs an edge node's
// commands through its pinned uplink (docs/security.md §4, "Edge nodes"):
// a log read (chunks to the operator's inbox, acknowledged back to the
// edge agent's) and an exec, on a real process.
func TestEdgeCommandsThroughUplink(t *testing.T) {
	if testing.Short() {
		t.Skip("edge commands: -short")
	}
	const node = "edge4"
	_, client := testenv.Runtime(t, filepath.Join(t.TempDir(), "runtime")) // real processes
	op := startEdgeOnHub(t, node, client).op
	p := podRef{node: node, name: "talks"}
	var pod v1.Pod
	if err := json.Unmarshal(podJSONImage(p.name, "busybox:1.36"), &pod); err != nil {
		t.Fatal(err)
	}
	pod.Spec.Containers[0].Command = []string{"sh", "-c", "echo hello-from-edge; exec sleep 600"}
	data, err := json.Marshal(&pod)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "write "+p.desiredKey(), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), attempt)
		defer cancel()
		kv, err := op.JS.KeyValue(ctx, wire.DesiredBucket)
		if err != nil {
			return err
		}
		_, err = kv.Put(ctx, p.desiredKey(), data)
		return err
	})
	c := &wire.Client{NC: op.NC, Timeout: attempt}
	eventually(t, "the pod's log read from the hub", func() error {
		var out strings.Builder
		if _, err := c.Logs(context.Background(), node, wire.LogsRequest{Namespace: namespace, Name: p.name}, &out); err != nil {
			return err
		}
		if !strings.Contains(out.String(), "hello-from-edge") {
			return fmt.Errorf("log %q", out.String())
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := c.Exec(ctx, node, wire.ExecRequest{Namespace: namespace, Name: p.name, Command: []string{"echo", "hi"}})
	if err != nil || string(r.Stdout) != "hi\n" || r.ExitCode != 0 {
		t.Fatalf("exec from the hub: %+v, %v", r, err)
	}
}
