package supervisor

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestPodUsesPullSecret: a pod's imagePullSecrets count as uses of the
// Secret (its change syncs the pod), not of a ConfigMap of the same name.
func TestPodUsesPullSecret(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{ImagePullSecrets: []v1.LocalObjectReference{{Name: "regcred"}}}}
	if !podUses(pod, "Secret", "regcred") {
		t.Error("the pull secret is not a use")
	}
	if podUses(pod, "ConfigMap", "regcred") || podUses(pod, "Secret", "other") {
		t.Error("another object counts as used")
	}
}
