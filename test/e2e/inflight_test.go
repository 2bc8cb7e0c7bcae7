//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri/kuberuntime"
	"github.com/actorlet/actorlet/test/testutil"
)

// Scenario 10: pods deleted from the bus right after being applied, while
// their sandboxes are being created, end terminated: never left running,
// no sandbox left ready.
func TestDeleteWhileCreating(t *testing.T) {
	a := startAgent(t, agentOptions{})
	rt := criFor(t)
	const n = 5
	var pods []*v1.Pod
	for i := 0; i < n; i++ {
		pods = append(pods, shPod(fmt.Sprintf("ephemeral-%d", i), "sleep 3600"))
	}
	// A pod that stays, to know the agent went on working.
	keeper := shPod("keeper", "sleep 3600")
	a.apply(t, append(pods, keeper)...)
	for _, p := range pods {
		a.mustCtl(t, "delete", "pod", p.Name, "-n", namespace, "--now")
	}
	a.waitPod(t, "keeper", 60*time.Second, isRunning)

	live := func(name string) (ready, running int, err error) {
		sel := map[string]string{kuberuntime.LabelPodNamespace: namespace, kuberuntime.LabelPodName: name}
		sbs, err := rt.ListPodSandbox(context.Background(), &runtimeapi.PodSandboxFilter{LabelSelector: sel})
		if err != nil {
			return 0, 0, err
		}
		cs, err := rt.ListContainers(context.Background(), &runtimeapi.ContainerFilter{LabelSelector: sel})
		if err != nil {
			return 0, 0, err
		}
		return len(readyOnly(sbs)), runtimePod{containers: cs}.runningContainers(), nil
	}
	check := func() error {
		all, err := a.pods()
		if err != nil {
			return err
		}
		for _, p := range pods {
			if s := all[p.Name]; s != nil {
				return fmt.Errorf("pod %s still listed: %s", p.Name, testutil.PodSummary(s))
			}
			ready, running, err := live(p.Name)
			if err != nil {
				return err
			}
			if ready != 0 || running != 0 {
				return fmt.Errorf("pod %s: %d ready sandboxes, %d running containers in containerd", p.Name, ready, running)
			}
		}
		return nil
	}
	eventually(t, 60*time.Second, check)
	// And it stays so: nothing started late by work that was in flight.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		if err := check(); err != nil {
			t.Fatalf("after the pods were gone: %v", err)
		}
	}
}
