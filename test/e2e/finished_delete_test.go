//go:build e2e

package e2e

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// finishedWorker matches `describe pod` of a pod whose actor has finished.
var finishedWorker = regexp.MustCompile(`Work Type:\s+terminated\s+Working:\s+false\s+Pending Update:\s+<none>`)

// A run-once pod that completed before the agent restarted can still be
// deleted gracefully (issue 22): `delete pod` ends with the pod gone, not
// listed Completed for good.
func TestCompletedPodDeletedAfterAgentRestart(t *testing.T) {
	a := startAgent(t, agentOptions{})
	job := shPod("report", "echo report done")
	job.Spec.RestartPolicy = v1.RestartPolicyOnFailure
	a.apply(t, job)
	a.waitPod(t, "report", 90*time.Second, hasPhase(v1.PodSucceeded))

	a.stop(t) // SIGTERM: the pod's containers stay, exited
	a.start(t)
	// The restarted agent's worker has found the pod completed and finished.
	eventually(t, 30*time.Second, func() error {
		out, _, err := a.ctl("describe", "pod", "report", "-n", namespace)
		if err != nil {
			return err
		}
		if !finishedWorker.MatchString(out) {
			return fmt.Errorf("the pod actor has not finished:\n%s", out)
		}
		return nil
	})

	a.mustCtl(t, "delete", "pod", "report", "-n", namespace)
	eventually(t, 30*time.Second, func() error {
		all, err := a.pods()
		if err != nil {
			return err
		}
		if p := all["report"]; p != nil {
			return fmt.Errorf("still listed, phase %s", p.Status.Phase)
		}
		return nil
	})
}
