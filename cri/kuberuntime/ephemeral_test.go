package kuberuntime

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// An ephemeral container the process runtime cannot run (no command: no
// image entrypoint) is never created: it waits with reason
// RuntimeUnsupported and the field's message, one Warning event says so,
// and later syncs neither fail nor try again; a debug container with a
// command next to it runs.
func TestIntegrationEphemeralRefusedOnProcessRuntime(t *testing.T) {
	e := newProcEnv(t)
	pod := shPod("debugged", map[string]string{"app": "exec sleep 300"}, "app")
	e.syncUntilRunning(t, pod)
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{
		{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "no-command", Image: "local/sh:1"}},
		{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "with-command", Image: "local/sh:1", Command: []string{"sleep", "300"}}},
	}
	for range 3 {
		if err := e.sync(t, pod).Error(); err != nil {
			t.Fatalf("sync with a refused ephemeral container: %v", err)
		}
	}
	st, api := e.status(t, pod)
	if cs := st.FindContainerStatusByName("no-command"); cs != nil {
		t.Fatalf("the refused ephemeral container was created: %+v", cs)
	}
	var refused, ran bool
	for _, cs := range api.EphemeralContainerStatuses {
		switch cs.Name {
		case "no-command":
			w := cs.State.Waiting
			refused = w != nil && w.Reason == "RuntimeUnsupported" && strings.Contains(w.Message, "spec.ephemeralContainers[0].command: Required value") &&
				strings.Contains(w.Message, "--container-runtime-endpoint")
		case "with-command":
			ran = cs.State.Running != nil
		}
	}
	if !refused || !ran {
		t.Fatalf("ephemeral statuses %+v: want no-command waiting RuntimeUnsupported and with-command running", api.EphemeralContainerStatuses)
	}
	warnings := 0
	for _, ev := range e.rec.Events() {
		if ev.Type == v1.EventTypeWarning && strings.Contains(ev.Message, "no-command") {
			warnings++
		}
	}
	if warnings != 1 {
		t.Errorf("%d Warning events about the refused container, want 1: %v", warnings, e.rec.Lines())
	}
}
