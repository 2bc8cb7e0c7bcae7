package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The states apply --wait waits for (--for).
const (
	forAuto      = "auto"      // ready for a long-running pod, completed for a run-once one
	forReady     = "ready"     // Running with every container Ready
	forRunning   = "running"   // Running with every container started (or already finished)
	forCompleted = "completed" // Succeeded (Failed is a failure)
	forDeleted   = "delete"    // gone from its node(s): actorletctl wait only
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
	case forDeleted, "deleted":
		return forDeleted, nil
	}
	return "", fmt.Errorf("--for %q: want auto, ready (condition=Ready), running, completed or (wait only) delete", s)
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

// wait is kubectl wait for pods: until each named pod reached the state
// --for names (ready by default), or is gone (--for delete). A pod that
// does not exist yet is waited for (a static pod about to start).
func (c *cli) wait(ctx context.Context, args []string) error {
	fs := c.flags("wait")
	ns, node := podFlags(fs)
	waitFor := fs.String("for", forReady, "ready (condition=Ready), running, completed, or delete")
	waitTimeout := fs.Duration("wait-timeout", 5*time.Minute, "how long to wait")
	pos, _, err := parse(fs, args)
	if err != nil {
		return err
	}
	targets, err := argTargets(pos, *ns)
	if err == nil {
		for _, t := range targets {
			if t.kind != "Pod" {
				err = fmt.Errorf("%s: wait waits for pods only", t.source)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "error: %v\n", err)
		fs.Usage()
		return errUsage
	}
	forState, err := parseWaitFor(*waitFor)
	if err != nil {
		return err
	}
	if forState == forAuto {
		forState = forReady // the pod's restart policy is not known here
	}
	var pods []applied
	for _, t := range targets {
		// No UID: whichever instance of the pod the node reports.
		pods = append(pods, applied{pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: t.namespace, Name: t.name}}, node: *node})
	}
	wctx, cancel := context.WithTimeout(ctx, *waitTimeout)
	defer cancel()
	if forState == forDeleted {
		return c.waitDeleted(wctx, pods)
	}
	return c.waitRunning(wctx, pods, forState)
}
