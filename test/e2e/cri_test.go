//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/cri/kuberuntime"
)

// dialCRI connects to containerd for checks the operator's tools cannot make
// (what really runs) and for the cleanup sweep.
func dialCRI(ctx context.Context) (*cri.Client, error) {
	c, err := cri.Dial(ctx, criEndpoint, cri.WithTimeout(30*time.Second))
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", criEndpoint, err)
	}
	return c, nil
}

// criFor returns a CRI client closed when t ends.
func criFor(t *testing.T) *cri.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := dialCRI(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// runtimePod is what containerd holds for one pod UID.
type runtimePod struct {
	sandboxes  []*runtimeapi.PodSandbox
	containers []*runtimeapi.Container
}

func (p runtimePod) readySandboxes() int {
	return count(p.sandboxes, func(s *runtimeapi.PodSandbox) bool { return s.State == runtimeapi.PodSandboxState_SANDBOX_READY })
}

func (p runtimePod) runningContainers() int {
	return count(p.containers, func(c *runtimeapi.Container) bool { return c.State == runtimeapi.ContainerState_CONTAINER_RUNNING })
}

// count is how many of xs match.
func count[T any](xs []T, match func(T) bool) int {
	n := 0
	for _, x := range xs {
		if match(x) {
			n++
		}
	}
	return n
}

// runtimePodByUID lists the sandboxes and containers labelled with uid.
func runtimePodByUID(ctx context.Context, c *cri.Client, uid string) (runtimePod, error) {
	sel := map[string]string{kuberuntime.LabelPodUID: uid}
	sbs, err := c.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		return runtimePod{}, fmt.Errorf("list sandboxes of pod %s: %w", uid, err)
	}
	cs, err := c.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		return runtimePod{}, fmt.Errorf("list containers of pod %s: %w", uid, err)
	}
	return runtimePod{sandboxes: sbs, containers: cs}, nil
}

// sandboxesIn lists the sandboxes of namespace ns.
func sandboxesIn(ctx context.Context, c *cri.Client, ns string) ([]*runtimeapi.PodSandbox, error) {
	sbs, err := c.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{kuberuntime.LabelPodNamespace: ns},
	})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes of namespace %s: %w", ns, err)
	}
	return sbs, nil
}

// sweepNamespace stops and removes every sandbox (and so its containers) of
// namespace ns, and only those. It returns how many it removed.
func sweepNamespace(ns string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := dialCRI(ctx)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	// A container the stopped agent was starting is "in starting state,
	// can't be removed" until containerd finishes the start: pass again
	// until everything is gone or the time is up.
	swept := -1
	for {
		n, err := sweepOnce(ctx, c, ns)
		if swept < 0 {
			swept = n
		}
		if err == nil || ctx.Err() != nil {
			return swept, err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// sweepOnce stops and removes every sandbox of ns once.
func sweepOnce(ctx context.Context, c *cri.Client, ns string) (int, error) {
	sbs, err := sandboxesIn(ctx, c, ns)
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, s := range sbs {
		if s.Labels[kuberuntime.LabelPodNamespace] != ns {
			continue // never anything else, whatever the runtime's filter did
		}
		if err := c.StopPodSandbox(ctx, s.Id); err != nil {
			errs = append(errs, fmt.Errorf("stop sandbox %s (%s): %w", s.Id, s.Metadata.GetName(), err))
			continue
		}
		if err := c.RemovePodSandbox(ctx, s.Id); err != nil {
			errs = append(errs, fmt.Errorf("remove sandbox %s (%s): %w", s.Id, s.Metadata.GetName(), err))
			deleteStuckTask(ctx, err)
		}
	}
	return len(sbs), errors.Join(errs...)
}

// stuckContainer finds the container a failed RemovePodSandbox names.
var stuckContainer = regexp.MustCompile(`failed to remove container \\?"([0-9a-f]{64})\\?"`)

// deleteStuckTask deletes, through containerd's own CLI and on the
// containerd under test (its socket: 1.6's ctr speaks to 2.x too), the task
// of the container a sandbox removal failed on. containerd 1.6 leaves a
// task in CREATED state when the client of its StartContainer goes away
// mid-call (the agent killed while creating pods: "failed to get task pid:
// context canceled"); CRI then shows the container exited but never
// removes it, and nothing through CRI can. containerd 2.4 was seen once
// refusing the removal with "cannot delete running task" after the same
// kill. The next pass removes the sandbox.
func deleteStuckTask(ctx context.Context, err error) {
	m := stuckContainer.FindStringSubmatch(err.Error())
	if m == nil {
		return
	}
	sock, serr := cri.SocketPath(criEndpoint)
	if serr != nil {
		return
	}
	_ = exec.CommandContext(ctx, "ctr", "-a", sock, "-n", "k8s.io", "tasks", "delete", "--force", m[1]).Run()
}

// readyOnly keeps the ready sandboxes.
func readyOnly(sbs []*runtimeapi.PodSandbox) []*runtimeapi.PodSandbox {
	var out []*runtimeapi.PodSandbox
	for _, s := range sbs {
		if s.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			out = append(out, s)
		}
	}
	return out
}
