package podrules

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestIsTerminal(t *testing.T) {
	for phase, want := range map[v1.PodPhase]bool{
		v1.PodPending: false, v1.PodRunning: false, v1.PodUnknown: false, "": false,
		v1.PodSucceeded: true, v1.PodFailed: true,
	} {
		if got := IsTerminal(phase); got != want {
			t.Errorf("IsTerminal(%q) = %v, want %v", phase, got, want)
		}
	}
}

func TestInitializedCondition(t *testing.T) {
	if c := InitializedCondition(nil); c.Type != v1.PodInitialized || c.Status != v1.ConditionTrue || c.Reason != "" {
		t.Errorf("no incomplete init containers: %+v", c)
	}
	c := InitializedCondition([]string{"a", "b"})
	if c.Status != v1.ConditionFalse || c.Reason != ReasonContainersNotInitialized || c.Message != "containers with incomplete status: [a b]" {
		t.Errorf("incomplete init containers: %+v", c)
	}
}
