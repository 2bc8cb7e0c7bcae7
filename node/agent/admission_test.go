package agent

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/messages"
)

func admissionPod(uid string, c v1.Container) *v1.Pod {
	c.Name, c.Image = "app", "busybox"
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}, Spec: v1.PodSpec{Containers: []v1.Container{c}}}
}

// The process runtime's admission: the program lookup is done by precheck
// (off the sync loop) and read by admit; a pod precheck did not see gets
// the checks that need no disk; other runtimes have no check.
func TestRuntimeAdmission(t *testing.T) {
	if newRuntimeAdmission("containerd://1.7.2") != nil || newRuntimeAdmission("").admitFunc() != nil {
		t.Fatal("a check for a runtime with image entrypoints")
	}
	r := newRuntimeAdmission("actorlet-process://0.1.0")
	missing := admissionPod("missing", v1.Container{Args: []string{"tcp-listen:5432,fork"}})
	onNode := admissionPod("on-node", v1.Container{Args: []string{"sh", "-c", "true"}})
	noCommand := admissionPod("no-command", v1.Container{})
	r.precheck(&messages.PodUpdate{Op: messages.OpAdd, Pods: []*v1.Pod{missing, onNode}})
	if reason, msg := r.admit(missing); reason != "RuntimeUnsupported" || !strings.Contains(msg, `args[0] "tcp-listen:5432,fork"`) {
		t.Errorf("args-only, program missing: %q %q", reason, msg)
	}
	if reason, msg := r.admit(onNode); reason != "" {
		t.Errorf("args-only, program on the node: %q %q", reason, msg)
	}
	if reason, msg := r.admit(noCommand); reason != "RuntimeUnsupported" || !strings.Contains(msg, "spec.containers[0].command: Required value") {
		t.Errorf("no command, not prechecked: %q %q", reason, msg)
	}
	// Not prechecked: no disk lookup in the sync loop, so admitted.
	if reason, _ := r.admit(admissionPod("late", v1.Container{Args: []string{"tcp-listen:5432,fork"}})); reason != "" {
		t.Errorf("a pod precheck did not see was looked up in the sync loop")
	}
	for i := range maxAdmissionVerdicts + 10 {
		r.precheck(&messages.PodUpdate{Op: messages.OpAdd, Pods: []*v1.Pod{admissionPod(string(rune(i)), v1.Container{Command: []string{"sh"}})}})
	}
	if n := len(r.verdicts); n > maxAdmissionVerdicts {
		t.Errorf("%d verdicts kept, limit %d", n, maxAdmissionVerdicts)
	}
}
