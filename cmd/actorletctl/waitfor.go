package main

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// The states apply --wait waits for (--for).
const (
	forAuto      = "auto"      // ready for a long-running pod, completed for a run-once one
	forReady     = "ready"     // Running with every container Ready
	forRunning   = "running"   // Running with every container started (or already finished)
	forCompleted = "completed" // Succeeded (Failed is a failure)
)

// parseWaitFor reads --for: the states above, or kubectl wait's spellings
// condition=Ready and jsonpath={.status.phase}=Running|Succeeded.
func parseWaitFor(s string) (string, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	switch v {
	case "", forAuto:
		return forAuto, nil
	case forReady, "condition=ready":
		return forReady, nil
	case forRunning, "jsonpath={.status.phase}=running":
		return forRunning, nil
	case forCompleted, "succeeded", "jsonpath={.status.phase}=succeeded":
		return forCompleted, nil
	}
	return "", fmt.Errorf("--for %q: want auto, ready (condition=Ready), running or completed", s)
}

// waitTarget is the state --wait waits for on pod: with auto, a pod that
// runs once (restartPolicy Never or OnFailure, a Job's pod) is waited for
// until it completed; any other until it is ready.
func waitTarget(pod *v1.Pod, forState string) string {
	if forState != forAuto {
		return forState
	}
	if pod.Spec.RestartPolicy == v1.RestartPolicyNever || pod.Spec.RestartPolicy == v1.RestartPolicyOnFailure {
		return forCompleted
	}
	return forReady
}
