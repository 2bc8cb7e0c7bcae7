package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/test/testutil"
)

func podYAML(name string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  containers:\n  - name: app\n    image: busybox\n", name)
}

func TestApply(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	single := testutil.WriteFile(t, dir, "web.yaml", podYAML("web"))
	sub := filepath.Join(dir, "many")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, sub, "a.yaml", podYAML("a")+"---\n"+podYAML("b"))
	testutil.WriteFile(t, sub, "c.json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"c","namespace":"ops"},"spec":{"containers":[{"name":"app","image":"busybox"}]}}`)
	testutil.WriteFile(t, sub, "d.yaml", podYAML("d")+"---\n"+
		"{apiVersion: v1, kind: Pod, metadata: {name: e}, spec: {containers: [{name: app, image: busybox}]}}\n")
	testutil.WriteFile(t, sub, "ignored.txt", "not a manifest")
	mixed := testutil.WriteFile(t, dir, "mixed.yaml", podYAML("good1")+"---\n"+
		"apiVersion: v1\nkind: Pod\nmetadata:\n  name: bad\nspec:\n  containers:\n  - name: app\n"+"---\n"+podYAML("good2"))

	tests := []struct {
		name       string
		args       []string
		stdin      string
		wantCode   int
		wantKeys   []string
		absentKeys []string
		wantOut    []string
		wantErr    []string
	}{
		{name: "file for a node", args: []string{"apply", "-f", single, "--node", "n1"},
			wantKeys: []string{wire.DesiredNodeKey("n1", "default", "web")}, wantOut: []string{"pod/web created"}},
		{name: "re-apply unchanged", args: []string{"apply", "-f", single, "--node", "n1"},
			wantKeys: []string{wire.DesiredNodeKey("n1", "default", "web")}, wantOut: []string{"pod/web unchanged"}},
		{name: "directory with multi-doc and json", args: []string{"apply", "-f", sub, "--node", "n1"},
			wantKeys: []string{wire.DesiredNodeKey("n1", "default", "a"), wire.DesiredNodeKey("n1", "default", "b"), wire.DesiredNodeKey("n1", "ops", "c"),
				wire.DesiredNodeKey("n1", "default", "d"), wire.DesiredNodeKey("n1", "default", "e")}},
		{name: "stdin", args: []string{"apply", "-f", "-", "--node", "n2"}, stdin: podYAML("from-stdin"),
			wantKeys: []string{wire.DesiredNodeKey("n2", "default", "from-stdin")}},
		{name: "invalid pod: error, others applied", args: []string{"apply", "-f", mixed, "--node", "n1"}, wantCode: 1,
			wantKeys:   []string{wire.DesiredNodeKey("n1", "default", "good1"), wire.DesiredNodeKey("n1", "default", "good2")},
			absentKeys: []string{wire.DesiredNodeKey("n1", "default", "bad")},
			wantErr:    []string{"mixed.yaml (document 2)", "spec.containers[0].image", "1 of 3 pods not applied"}},
		{name: "selector writes a fleet pod", args: []string{"apply", "-f", single, "--selector", "role=edge,zone=a"},
			wantKeys: []string{wire.DesiredFleetKey("default", "web")}},
		{name: "bad selector", args: []string{"apply", "-f", single, "--selector", "=x"}, wantCode: 1, wantErr: []string{"--selector"}},
		{name: "no node registered", args: []string{"apply", "-f", single}, wantCode: 1, wantErr: []string{"no node is registered"}},
		{name: "missing file", args: []string{"apply", "-f", filepath.Join(dir, "nope.yaml"), "--node", "n1"}, wantCode: 1, wantErr: []string{"nope.yaml"}},
		{name: "no -f", args: []string{"apply"}, wantCode: 2, wantErr: []string{"apply needs -f"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := e.run(context.Background(), tt.stdin, tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.wantCode, out, errOut)
			}
			for _, k := range tt.wantKeys {
				if p := e.pod(wire.DesiredBucket, k); p == nil || p.UID == "" {
					t.Errorf("key %q: pod %v, want a pod with a UID", k, p)
				}
			}
			for _, k := range tt.absentKeys {
				if p := e.pod(wire.DesiredBucket, k); p != nil {
					t.Errorf("key %q was written", k)
				}
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("stdout %q lacks %q", out, w)
				}
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q lacks %q", errOut, w)
				}
			}
		})
	}

	t.Run("details", func(t *testing.T) {
		p := e.pod(wire.DesiredBucket, wire.DesiredNodeKey("n1", "default", "web"))
		if p.Spec.NodeName != "n1" || p.Spec.RestartPolicy != v1.RestartPolicyAlways || !p.CreationTimestamp.Time.Equal(now) {
			t.Fatalf("applied pod not defaulted/placed: %+v", p)
		}
		fleet := e.pod(wire.DesiredBucket, wire.DesiredFleetKey("default", "web"))
		if fleet.Spec.NodeSelector["role"] != "edge" || fleet.Spec.NodeSelector["zone"] != "a" || fleet.Spec.NodeName != "" {
			t.Fatalf("fleet pod selector = %v node %q", fleet.Spec.NodeSelector, fleet.Spec.NodeName)
		}
	})
	t.Run("re-apply keeps the UID", func(t *testing.T) {
		key := wire.DesiredNodeKey("n1", "default", "web")
		before := e.pod(wire.DesiredBucket, key).UID
		e.mustRun("apply", "-f", single, "--node", "n1")
		if after := e.pod(wire.DesiredBucket, key).UID; after != before {
			t.Fatalf("UID changed from %s to %s", before, after)
		}
	})
	t.Run("the only registered node is the default", func(t *testing.T) {
		e.put(wire.NodesBucket, "solo", node("solo", now, v1.ConditionTrue))
		e.mustRun("apply", "-f", single)
		if e.pod(wire.DesiredBucket, wire.DesiredNodeKey("solo", "default", "web")) == nil {
			t.Fatal("pod not written for the only node")
		}
		e.put(wire.NodesBucket, "other", node("other", now, v1.ConditionTrue))
		if _, errOut, code := e.run(context.Background(), "", "apply", "-f", single); code != 1 || !strings.Contains(errOut, "2 nodes are registered") {
			t.Fatalf("exit %d stderr %q, want 2 nodes error", code, errOut)
		}
	})
}

func TestApplyWait(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()

	// The "node" reports statuses once the pod is written.
	report := func(name string, status func(*v1.Pod) *v1.Pod) {
		testutil.Eventually(t, 10*time.Second, func() error {
			p := e.pod(wire.DesiredBucket, wire.DesiredNodeKey("n1", "default", name))
			if p == nil {
				return fmt.Errorf("not applied yet")
			}
			e.put(wire.StatusBucket, wire.StatusKey("n1", "default", name), status(p.DeepCopy()))
			return nil
		})
	}

	t.Run("running", func(t *testing.T) {
		go report("web", func(p *v1.Pod) *v1.Pod {
			e.put(wire.StatusBucket, wire.StatusKey("n1", "default", "web"), waiting(p.DeepCopy(), "ContainerCreating", 0))
			return running(p)
		})
		file := testutil.WriteFile(t, dir, "web.yaml", podYAML("web"))
		out, errOut, code := e.run(context.Background(), "", "apply", "-f", file, "--node", "n1", "--wait", "--wait-timeout", "20s")
		if code != 0 || !strings.Contains(out, "pod/web: Running on n1 - ready") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
	})
	t.Run("crash loop fails", func(t *testing.T) {
		go report("crash", func(p *v1.Pod) *v1.Pod { return waiting(p, "CrashLoopBackOff", 3) })
		file := testutil.WriteFile(t, dir, "crash.yaml", podYAML("crash"))
		out, errOut, code := e.run(context.Background(), "", "apply", "-f", file, "--node", "n1", "--wait", "--wait-timeout", "20s")
		if code != 1 || !strings.Contains(errOut, "CrashLoopBackOff") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		_, errOut, code := e.run(context.Background(), "", "apply", "-f", testutil.WriteFile(t, dir, "slow.yaml", podYAML("slow")), "--node", "n1", "--wait", "--wait-timeout", "300ms")
		if code != 1 || !strings.Contains(errOut, "timed out waiting for pods: slow (not ready)") {
			t.Fatalf("exit %d stderr %s", code, errOut)
		}
	})
}

// TestApplyRefusesWhatTheRuntimeCannotRun: a node on the process runtime
// has no image entrypoints, so a pod with a container without command is
// refused before it is written, naming the field and what to do; other
// runtimes, fleet pods and pods with a command are written.
func TestApplyRefusesWhatTheRuntimeCannotRun(t *testing.T) {
	e := newEnv(t)
	proc := node("proc", now, v1.ConditionTrue)
	proc.Status.NodeInfo.ContainerRuntimeVersion = "actorlet-process://0.1.0"
	e.put(wire.NodesBucket, "proc", proc)
	ctrd := node("ctrd", now, v1.ConditionTrue)
	ctrd.Status.NodeInfo.ContainerRuntimeVersion = "containerd://1.7.2"
	e.put(wire.NodesBucket, "ctrd", ctrd)
	dir := t.TempDir()
	withCommand := strings.Replace(podYAML("with-command"), "image: busybox\n", "image: busybox\n    command: [sleep, \"60\"]\n", 1)
	file := testutil.WriteFile(t, dir, "pods.yaml", podYAML("no-command")+"---\n"+withCommand)

	_, errOut, code := e.run(context.Background(), "", "apply", "-f", file, "--node", "proc")
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr %s", code, errOut)
	}
	for _, w := range []string{"pods.yaml: pod default/no-command cannot run on node proc (runtime actorlet-process://0.1.0)",
		"spec.containers[0].command: Required value", "no image entrypoint", "--container-runtime-endpoint", "1 of 2 pods not applied"} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr %q lacks %q", errOut, w)
		}
	}
	if e.pod(wire.DesiredBucket, wire.DesiredNodeKey("proc", "default", "no-command")) != nil {
		t.Error("the pod without a command was written for the process runtime node")
	}
	if e.pod(wire.DesiredBucket, wire.DesiredNodeKey("proc", "default", "with-command")) == nil {
		t.Error("the pod with a command was not written")
	}
	e.mustRun("apply", "-f", file, "--node", "ctrd")
	e.mustRun("apply", "-f", file, "--selector", "zone=a") // a fleet pod: the nodes' admission decides
	if e.pod(wire.DesiredBucket, wire.DesiredNodeKey("ctrd", "default", "no-command")) == nil ||
		e.pod(wire.DesiredBucket, wire.DesiredFleetKey("default", "no-command")) == nil {
		t.Error("a pod without command was refused for containerd or as a fleet pod")
	}
}
