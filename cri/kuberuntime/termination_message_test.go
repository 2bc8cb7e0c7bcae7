package kuberuntime

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestIntegrationTerminationMessages runs containers on the process runtime
// that leave a termination message: from the file (its last 4 KiB), from
// the log tail with FallbackToLogsOnError on a failure, none with the File
// policy when nothing was written, and none from a file left by an older
// container.
func TestIntegrationTerminationMessages(t *testing.T) {
	e := newProcEnv(t)
	dir := t.TempDir()
	stale := filepath.Join(dir, "stale")
	if err := os.WriteFile(stale, []byte("from an older container"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 5000) + "END"
	pod := newPod("msgs")
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	pod.Spec.Containers = []v1.Container{
		{Name: "file", Command: []string{"/bin/sh", "-c", "printf 'all done' > " + filepath.Join(dir, "file")},
			TerminationMessagePath: filepath.Join(dir, "file"), TerminationMessagePolicy: v1.TerminationMessageReadFile},
		{Name: "big", Command: []string{"/bin/sh", "-c", fmt.Sprintf("printf '%s' > %s; exit 2", big, filepath.Join(dir, "big"))},
			TerminationMessagePath: filepath.Join(dir, "big"), TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError},
		{Name: "logs", Command: []string{"/bin/sh", "-c", "for i in $(seq 1 100); do echo line $i; done; echo fatal: no config; exit 1"},
			TerminationMessagePath: filepath.Join(dir, "logs"), TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError},
		{Name: "silent", Command: []string{"/bin/sh", "-c", "echo not a message; exit 1"},
			TerminationMessagePath: filepath.Join(dir, "silent"), TerminationMessagePolicy: v1.TerminationMessageReadFile},
		{Name: "stale", Command: []string{"/bin/sh", "-c", "exit 0"},
			TerminationMessagePath: stale, TerminationMessagePolicy: v1.TerminationMessageReadFile},
	}
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].Image = "local/sh:1"
	}
	api := e.syncUntil(t, pod, func(s v1.PodStatus) error {
		if s.Phase != v1.PodFailed {
			return fmt.Errorf("phase %s", s.Phase)
		}
		return nil
	})
	msg := map[string]string{}
	for _, cs := range api.ContainerStatuses {
		if cs.State.Terminated == nil {
			t.Fatalf("%s not terminated: %+v", cs.Name, cs.State)
		}
		msg[cs.Name] = cs.State.Terminated.Message
	}
	if msg["file"] != "all done" {
		t.Errorf("file message = %q, want %q", msg["file"], "all done")
	}
	// The file's last 4 KiB, then cut to the pod's share (12 KiB / 5).
	if m, want := msg["big"], big[len(big)-maxTerminationMessage:][:maxPodTerminationMessages/5]; m != want {
		t.Errorf("big message: %d bytes, want the first %d of the file's last %d", len(m), len(want), maxTerminationMessage)
	}
	if m := msg["logs"]; !strings.HasSuffix(m, "line 100\nfatal: no config\n") || strings.Contains(m, "line 20\n") || strings.Count(m, "\n") != maxTerminationLogLines {
		t.Errorf("logs message = %q, want the last %d log lines", m, maxTerminationLogLines)
	}
	if msg["silent"] != "" || msg["stale"] != "" {
		t.Errorf("silent = %q, stale = %q: want no message", msg["silent"], msg["stale"])
	}
}

// The pod's messages share 12 KiB: each is cut to its share.
func TestLimitTerminationMessages(t *testing.T) {
	pod := newPod("p", "a", "b", "c")
	pod.Spec.InitContainers = []v1.Container{{Name: "i"}}
	term := func(n int) v1.ContainerState {
		return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Message: strings.Repeat("m", n)}}
	}
	s := v1.PodStatus{
		InitContainerStatuses: []v1.ContainerStatus{{Name: "i", State: term(4096)}},
		ContainerStatuses: []v1.ContainerStatus{{Name: "a", State: term(4096), LastTerminationState: term(4000)},
			{Name: "b", State: term(100)}, {Name: "c"}},
	}
	limitTerminationMessages(pod, &s)
	share := maxPodTerminationMessages / 4
	for _, got := range []int{len(s.InitContainerStatuses[0].State.Terminated.Message), len(s.ContainerStatuses[0].State.Terminated.Message),
		len(s.ContainerStatuses[0].LastTerminationState.Terminated.Message)} {
		if got != share {
			t.Errorf("message of %d bytes, want cut to %d", got, share)
		}
	}
	if got := len(s.ContainerStatuses[1].State.Terminated.Message); got != 100 {
		t.Errorf("short message cut to %d", got)
	}
}
