package actorcore

import (
	"fmt"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/messages"
)

// churnPods is how many pods the churn test adds and removes.
const churnPods = 200

// 200 pods added, then removed by deleting their keys, leave nothing
// behind: no status entry, no container process or shim, no pod actor. How
// long both took is logged, not asserted.
func TestChurnOf200PodsLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	start := time.Now()
	e := newEnv(t, envOptions{maxPods: churnPods + 10})
	watch := e.watchStatus("")
	name := func(i int) string { return fmt.Sprintf("churn-%03d", i) }

	added := time.Now()
	for i := range churnPods {
		e.apply(e.pod(name(i), shell("app", "exec sleep 3600")))
	}
	uids := map[string]types.UID{}
	eventually(t, 120*time.Second, func() error {
		latest, _ := watch.snapshot()
		n := 0
		for _, p := range latest {
			if running(p) == nil {
				n++
				uids[p.Name] = p.UID
			}
		}
		if n != churnPods {
			return fmt.Errorf("%d of %d pods running", n, churnPods)
		}
		return nil
	})
	upTook := time.Since(added)
	if procs := e.processes(); len(procs) < churnPods {
		t.Errorf("%d processes of the test alive with %d pods running, want at least one per pod", len(procs), churnPods)
	}
	if actors := podActors(e.agent.ActorSystem(), e.agent.Supervisor()); len(actors) != churnPods {
		t.Errorf("%d pod actors with %d pods running", len(actors), churnPods)
	}

	removed := time.Now()
	for i := range churnPods {
		e.remove(name(i))
	}
	eventually(t, 120*time.Second, func() error {
		latest, _ := watch.snapshot()
		if len(latest) != 0 {
			return fmt.Errorf("%d status entries left", len(latest))
		}
		if procs := e.processes(); len(procs) != 0 {
			return fmt.Errorf("%d processes left, e.g. %d", len(procs), procs[0])
		}
		if actors := podActors(e.agent.ActorSystem(), e.agent.Supervisor()); len(actors) != 0 {
			return fmt.Errorf("%d pod actors left, e.g. %s", len(actors), actors[0])
		}
		return nil
	})
	downTook := time.Since(removed)
	// The agent counted every removal once (actorlet_remote_pod_removals_total,
	// all causes; each was a tombstone).
	if n := counterValue(t, e, "actorlet_remote_pod_removals_total"); n != churnPods {
		t.Errorf("actorlet_remote_pod_removals_total = %v after deleting %d keys, want %d", n, churnPods, churnPods)
	}
	// The supervisor agrees: it knows no worker for any of the UIDs.
	for pod, uid := range uids {
		if d := describeWorker(t, e.agent.ActorSystem(), e.agent.Supervisor(), uid); d.Found {
			t.Errorf("pod %s (%s): the supervisor still has a worker: %+v", pod, uid, d)
		}
	}
	t.Logf("%d pods: running after %s, gone (status, processes, actors) %s after removal",
		churnPods, upTook.Round(time.Millisecond), downTook.Round(time.Millisecond))
	t.Logf("wall time %s", time.Since(start).Round(time.Millisecond))
}

// describeWorker asks the supervisor about the worker of uid.
func describeWorker(t *testing.T, sys *actor.ActorSystem, supervisor *actor.PID, uid types.UID) *messages.PodWorkerDescription {
	t.Helper()
	res, err := sys.Root.RequestFuture(supervisor, &messages.DescribePodWorker{UID: uid}, 5*time.Second).Result()
	if err != nil {
		t.Fatalf("describe worker %s: %v", uid, err)
	}
	d, ok := res.(*messages.PodWorkerDescription)
	if !ok {
		t.Fatalf("describe worker %s: reply %T", uid, res)
	}
	return d
}
