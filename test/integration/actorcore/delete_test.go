package actorcore

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/test/testutil"
)

// A graceful delete (the desired pod rewritten with a deletion timestamp and
// grace period, as actorletctl delete does) runs the preStop hook, gives a
// TERM-ignoring container the grace period before SIGKILL (exit 137), and
// once the pod has terminated the node deletes the desired key itself and
// its status entry goes away.
func TestGracefulDeleteRunsPreStopAndHonoursGrace(t *testing.T) {
	t.Parallel()
	start := time.Now()
	e := newEnv(t, envOptions{})
	preStopMarker := filepath.Join(e.dir, "prestop")
	app := shell("app", `trap "" TERM; while :; do sleep 1; done`)
	app.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{
		Exec: &v1.ExecAction{Command: []string{"/bin/sh", "-c", "date +%s.%N > " + preStopMarker}},
	}}
	pod := e.pod("graceful", app)
	long := int64(30)
	pod.Spec.TerminationGracePeriodSeconds = &long // the deletion's grace must win
	e.apply(pod)
	e.waitPod("graceful", 30*time.Second, running)

	// Every status written is also published on the pod's status subject;
	// a bucket watcher can miss the final one, which the deletion of the
	// entry right after replaces (the bucket keeps one value per key).
	published := make(chan statusUpdate, 64)
	sub, err := e.conn.NC.Subscribe(wire.StatusSubject(e.node, namespace, "graceful"), func(m *nats.Msg) {
		var p v1.Pod
		if json.Unmarshal(m.Data, &p) == nil {
			select {
			case published <- statusUpdate{at: time.Now(), pod: &p}:
			default:
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	const grace = 3
	deleted := time.Now()
	e.deleteGracefully("graceful", grace)

	// The first published status with the container terminated.
	var killed statusUpdate
	seen := 0
	for timeout := time.After(30 * time.Second); killed.pod == nil; {
		select {
		case u := <-published:
			seen++
			if cs := u.pod.Status.ContainerStatuses; len(cs) == 1 && cs[0].State.Terminated != nil {
				killed = u
			}
		case <-timeout:
			t.Fatalf("no status with the container terminated among %d published", seen)
		}
	}
	term := killed.pod.Status.ContainerStatuses[0].State.Terminated
	if term.ExitCode != 137 {
		t.Errorf("exit code = %d (%s), want 137: the container ignores TERM, so only SIGKILL ends it", term.ExitCode, term.Reason)
	}
	if killed.pod.DeletionTimestamp == nil {
		t.Error("the terminated status does not carry the deletion timestamp")
	}
	took := killed.at.Sub(deleted)
	t.Logf("terminated %s after the delete (grace %ds)", took.Round(time.Millisecond), grace)
	if took < grace*time.Second-500*time.Millisecond || took > (grace+10)*time.Second {
		t.Errorf("the container was killed %s after the delete, want about the %ds grace period", took, grace)
	}
	if _, err := os.Stat(preStopMarker); err != nil {
		t.Errorf("the preStop hook did not run: %v", err)
	}

	// Finalize: the node removes the desired key, then the status entry.
	eventually(t, 15*time.Second, func() error {
		exists, err := e.desiredExists("graceful")
		if err != nil || exists {
			return fmt.Errorf("desired key still there (err %v)", err)
		}
		return nil
	})
	eventually(t, 15*time.Second, func() error {
		if p, err := e.podStatus("graceful"); err == nil {
			return fmt.Errorf("status entry still there: %s", testutil.PodSummary(p))
		}
		return nil
	})
	eventually(t, 15*time.Second, func() error {
		cs, err := e.containers("graceful")
		if err != nil {
			return err
		}
		for _, c := range cs {
			if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				return fmt.Errorf("container %s still running", c.Id)
			}
		}
		return nil
	})
	t.Logf("wall time %s", time.Since(start).Round(time.Millisecond))
}

// An operator who applies a pod again while it is being deleted (the UID
// kept and the deletion timestamp gone, as actorletctl apply writes it) gets
// the pod back: it runs again with a new container, and is not left stopped
// with its desired key never finalized.
func TestReapplyWhileDeletingRunsThePodAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	pod := e.pod("reapplied", shell("app", `trap "" TERM; while :; do sleep 1; done`))
	long := int64(3600) // the kill would outlast the test: only the re-apply ends it
	pod.Spec.TerminationGracePeriodSeconds = &long
	e.apply(pod)
	first := e.waitPod("reapplied", 30*time.Second, running)

	e.deleteGracefully("reapplied", long)
	e.waitPod("reapplied", 30*time.Second, func(p *v1.Pod) error {
		if p.DeletionTimestamp == nil {
			return fmt.Errorf("deletion not seen yet")
		}
		return nil
	})
	e.apply(pod)
	again := e.waitPod("reapplied", 30*time.Second, func(p *v1.Pod) error {
		if p.DeletionTimestamp != nil {
			return fmt.Errorf("still being deleted")
		}
		if err := running(p); err != nil {
			return err
		}
		if p.Status.ContainerStatuses[0].ContainerID == first.Status.ContainerStatuses[0].ContainerID {
			return fmt.Errorf("the first container still runs")
		}
		return nil
	})
	if again.UID != first.UID {
		t.Errorf("UID %s after the re-apply, want the kept %s", again.UID, first.UID)
	}
	if ok, err := e.desiredExists("reapplied"); err != nil || !ok {
		t.Errorf("desired key of the re-applied pod: exists %v, err %v", ok, err)
	}
}
