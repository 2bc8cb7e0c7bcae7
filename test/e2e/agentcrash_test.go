//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Scenario 7: the agent is killed (SIGKILL) in the middle of creating 20
// pods and started again: every pod ends Running exactly once (one ready
// sandbox, one container, in containerd) and nothing is orphaned.
func TestAgentKilledWhileCreatingPods(t *testing.T) {
	a := startAgent(t, agentOptions{})
	rt := criFor(t)
	const n = 20
	var pods []*v1.Pod
	for i := 0; i < n; i++ {
		pods = append(pods, shPod(fmt.Sprintf("crashed-%02d", i), "sleep 3600"))
	}
	a.apply(t, pods...)

	// Kill it once containerd has some of the sandboxes, before all run.
	var made int
	eventually(t, 60*time.Second, func() error {
		sbs, err := sandboxesIn(context.Background(), rt, namespace)
		if err != nil {
			return err
		}
		if made = len(sbs); made < 3 {
			return fmt.Errorf("%d sandboxes so far", made)
		}
		return nil
	})
	a.kill(t)
	ctrs, err := rt.ListContainers(context.Background(), &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.pod.namespace": namespace}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("agent killed with %d sandboxes and %d containers of %d pods made", made, len(ctrs), n)
	if len(ctrs) >= n {
		t.Logf("every container already existed when the agent died: the scenario degenerates to an adoption")
	}

	a.start(t)
	var all map[string]*v1.Pod
	eventually(t, 2*time.Minute, func() error {
		if all, err = a.pods(); err != nil {
			return err
		}
		for _, p := range pods {
			if s := all[p.Name]; s == nil || isRunning(s) != nil {
				return fmt.Errorf("pod %s not running", p.Name)
			}
		}
		return nil
	})

	// Exactly once each (dead leftovers are collected shortly after the
	// pod's container starts), and nothing else in the namespace.
	//
	// One exception is tolerated and logged: containerd itself failing the
	// first start (StartError, never started) of a container in a sandbox it
	// was still finishing for the killed agent ("namespace path: lstat
	// /proc/0/ns/ipc"). The agent then starts a new instance, as the kubelet
	// does, and keeps the failed one as the pod's last dead instance.
	uids := map[string]string{}
	for _, p := range pods {
		uids[string(all[p.Name].UID)] = p.Name
	}
	failedStarts := map[string]bool{}
	eventually(t, 20*time.Second, func() error {
		for uid, name := range uids {
			rp, err := runtimePodByUID(context.Background(), rt, uid)
			if err != nil {
				return err
			}
			if len(rp.sandboxes) != 1 || rp.readySandboxes() != 1 || rp.runningContainers() != 1 {
				return fmt.Errorf("pod %s: %d sandboxes (%d ready), %d containers (%d running); want exactly one ready sandbox and one running container",
					name, len(rp.sandboxes), rp.readySandboxes(), len(rp.containers), rp.runningContainers())
			}
			for _, c := range rp.containers {
				if c.PodSandboxId != rp.sandboxes[0].Id {
					return fmt.Errorf("pod %s: container %s in sandbox %s, not the pod's sandbox %s", name, c.Id, c.PodSandboxId, rp.sandboxes[0].Id)
				}
				if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
					continue
				}
				st, err := rt.ContainerStatus(context.Background(), c.Id, false)
				if err != nil {
					return err
				}
				if st.Status.Reason != "StartError" || st.Status.StartedAt != 0 {
					return fmt.Errorf("pod %s: a second container %s (%s, %s) beside the running one", name, c.Id, c.State, st.Status.Reason)
				}
				failedStarts[name] = true
			}
		}
		return nil
	})
	for _, p := range pods {
		got := containerStatus(all[p.Name], "main").RestartCount
		switch {
		case failedStarts[p.Name]:
			t.Logf("pod %s: containerd failed the first start in its half-made sandbox; restarted once (restartCount %d)", p.Name, got)
		case got != 0:
			t.Errorf("pod %s: restartCount %d, want 0", p.Name, got)
		}
	}
	sbs, err := sandboxesIn(context.Background(), rt, namespace)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sbs {
		if _, ok := uids[s.Labels["io.kubernetes.pod.uid"]]; !ok {
			t.Errorf("orphaned sandbox %s (%s, %s) belongs to no pod", s.Id, s.Metadata.GetName(), s.State)
		}
	}
}
