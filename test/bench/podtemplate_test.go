package main

import (
	"os"
	"path/filepath"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri/kuberuntime"
)

// The agent's configuration becomes the raw pod's: its identity, labels,
// log directory and pod cgroup are the raw pod's own, every other field is
// the agent's, and each host path it mounted is backed by a fresh one of
// the same kind in the raw pod's directory.
func TestAsRawPod(t *testing.T) {
	agentDir := t.TempDir()
	msgFile := filepath.Join(agentDir, "termination")
	if err := os.WriteFile(msgFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tmpl := &podTemplate{}
	agentLabels := map[string]string{kuberuntime.LabelNode: "n1", kuberuntime.LabelPodUID: "u1"}
	tmpl.captureSandbox(&runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Uid: "u1"}, Labels: agentLabels,
		Annotations: map[string]string{"a": "b"}, LogDirectory: "/var/log/pods/x",
		Linux: &runtimeapi.LinuxPodSandboxConfig{CgroupParent: "/kubepods/besteffort/podu1"},
	})
	tmpl.captureContainer(&runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Labels: agentLabels, LogPath: "c/0.log",
		Mounts: []*runtimeapi.Mount{{ContainerPath: "/dev/termination-log", HostPath: msgFile}, {ContainerPath: "/data", HostPath: agentDir}},
		Envs:   []*runtimeapi.KeyValue{{Key: "K", Value: []byte("V")}},
	})
	// A raw pod's own calls are not captured.
	tmpl.captureSandbox(&runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "raw"}})
	sc, cc := tmpl.configs()
	if sc == nil || sc.Metadata.Name != "p" {
		t.Fatalf("captured sandbox %v", sc)
	}
	podDir := t.TempDir()
	labels := map[string]string{kuberuntime.LabelPodUID: "raw-1", runLabel: "r"}
	if err := asRawPod(sc, cc, "raw1", "raw-1", podDir, "/actorlet-bench-r", labels); err != nil {
		t.Fatal(err)
	}
	if sc.Metadata.Uid != "raw-1" || sc.Metadata.Namespace != benchNamespace || sc.Hostname != "raw1" || sc.LogDirectory != podDir {
		t.Errorf("sandbox identity %v, hostname %q, log dir %q", sc.Metadata, sc.Hostname, sc.LogDirectory)
	}
	if got := sc.Linux.CgroupParent; got != "/actorlet-bench-r/besteffort/podraw-1" {
		t.Errorf("cgroup parent %q", got)
	}
	if sc.Labels[kuberuntime.LabelNode] != "" || cc.Labels[kuberuntime.LabelNode] != "" || cc.Labels[kuberuntime.LabelContainerName] != "c" || cc.Labels[runLabel] != "r" {
		t.Errorf("labels %v, %v", sc.Labels, cc.Labels)
	}
	if sc.Annotations["a"] != "b" || string(cc.Envs[0].Value) != "V" {
		t.Errorf("the agent's other fields were not kept: %v %v", sc.Annotations, cc.Envs)
	}
	for i, m := range cc.Mounts {
		if filepath.Dir(m.HostPath) != podDir {
			t.Errorf("mount %s backed by %s, not in the raw pod's directory", m.ContainerPath, m.HostPath)
			continue
		}
		st, err := os.Stat(m.HostPath)
		if err != nil || st.IsDir() != (i == 1) {
			t.Errorf("mount %s: %v, dir %v", m.ContainerPath, err, st != nil && st.IsDir())
		}
	}
	if _, err := os.Stat(filepath.Join(podDir, "c")); err != nil {
		t.Errorf("container log directory: %v", err)
	}
	// Capturing again keeps the first.
	tmpl.captureSandbox(&runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "q"}, Labels: agentLabels})
	if sc, _ := tmpl.configs(); sc.Metadata.Name != "p" {
		t.Errorf("a later pod replaced the first: %v", sc.Metadata)
	}
}

// A client without a template (nil) captures nothing and does not fail.
func TestNilTemplateCapturesNothing(t *testing.T) {
	var tmpl *podTemplate
	labels := map[string]string{kuberuntime.LabelNode: "n1"}
	tmpl.captureSandbox(&runtimeapi.PodSandboxConfig{Labels: labels})
	tmpl.captureContainer(&runtimeapi.ContainerConfig{Labels: labels})
}
