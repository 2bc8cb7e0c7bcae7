package kuberuntime

import (
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The redactor replaces whole values, the longer of two overlapping ones
// first, each line of a multi-line value, and leaves values too short to
// tell from text; a redacted error keeps its kind.
func TestRedact(t *testing.T) {
	key := "-----BEGIN KEY-----\nMIIBOgIBAAJBAK\n-----END KEY-----"
	m := NewManager(nil, Options{Objects: &mapObjects{secrets: map[string]*v1.Secret{
		"ns/db":  {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"}, Data: map[string][]byte{"pw": []byte("hunter2"), "long": []byte("hunter2-and-more"), "short": []byte("abc")}},
		"ns/tls": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tls"}, Data: map[string][]byte{"key": []byte(key)}},
		"ns/not": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "not"}, Data: map[string][]byte{"x": []byte("unreferenced")}},
	}}})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1"}, Spec: v1.PodSpec{
		Containers: []v1.Container{{Name: "c", Env: []v1.EnvVar{{Name: "PW", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "db"}, Key: "pw"}}}}}},
		Volumes: []v1.Volume{
			{Name: "tls", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "tls"}}},
			{Name: "all", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "db"}}}}}}},
		},
	}}
	for in, want := range map[string]string{
		"pw hunter2 and hunter2-and-more": "pw [redacted] and [redacted]",
		"line MIIBOgIBAAJBAK quoted":      "line [redacted] quoted",
		"whole " + key:                    "whole [redacted]",
		"abc stays, unreferenced too":     "abc stays, unreferenced too",
		"":                                "",
	} {
		if got := m.Redact(pod, in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	// Values the containers were started with stay redacted after the
	// Secret changed; forgetting the pod drops them.
	m.secrets.add(pod.UID, redactable("old-password"))
	if got := m.Redact(pod, "was old-password"); got != "was [redacted]" {
		t.Errorf("an old value: %q", got)
	}
	err := m.redactErr(pod, newKindError(ErrRunContainer, "exec /bin/hunter2: no such file"))
	if !errors.Is(err, ErrRunContainer) || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("redactErr = %v (kind kept: %v)", err, errors.Is(err, ErrRunContainer))
	}
	cause := errors.New("rpc: hunter2")
	if err := m.redactErr(pod, cause); !errors.Is(err, cause) || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("redactErr(plain) = %v", err)
	}
	m.forgetPod(pod.UID)
	if got := m.Redact(pod, "was old-password"); got != "was old-password" {
		t.Errorf("after forgetPod: %q", got)
	}
	st := v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Message: "hunter2"}},
		LastTerminationState: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Message: "x hunter2"}}}}}
	m.redactStatus(pod, &st)
	if st.ContainerStatuses[0].State.Terminated.Message != Redacted || st.ContainerStatuses[0].LastTerminationState.Waiting.Message != "x "+Redacted {
		t.Errorf("redactStatus: %+v", st.ContainerStatuses[0])
	}
}
