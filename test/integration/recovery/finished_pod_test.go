package recovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/node/agent"
	"github.com/actorlet/actorlet/test/testenv"
	"github.com/actorlet/actorlet/test/testutil"
)

// A run-once pod that completed before an agent restart can still be
// deleted gracefully afterwards (issue 22): the restarted agent's worker is
// finished from its first update, and must still take the deletion, publish
// the deleted pod's final status (so the desired key is finalized) and
// forget it.
func TestCompletedPodDeletedAfterAgentRestart(t *testing.T) {
	n := completedBeforeRestart(t, "fin1")
	key := wire.DesiredNodeKey("fin1", "default", "report")
	deleteGracefully(t, n.desired, key)
	testutil.Eventually(t, 15*time.Second, func() error {
		if _, err := n.desired.Get(t.Context(), key); !errors.Is(err, jetstream.ErrKeyNotFound) {
			return fmt.Errorf("the deleted pod's desired key is still there (err %v)", err)
		}
		if _, err := n.status.Get(t.Context(), wire.StatusKey("fin1", "default", "report")); !errors.Is(err, jetstream.ErrKeyNotFound) {
			return fmt.Errorf("the deleted pod is still listed (err %v)", err)
		}
		return nil
	})
}

// A completed pod replaced in place by a pod of the same name and a new UID
// after an agent restart (a node that missed the delete sees the UID
// change) runs the new pod; the finished worker of the old UID is purged.
func TestCompletedPodReplacedByNewUIDAfterAgentRestart(t *testing.T) {
	n := completedBeforeRestart(t, "fin2")
	next := sleepPod("report")
	next.UID = "0b9c5a3e-1f7d-4c62-9a57-2d1e8f6b4c10"
	apply(t, n.desired, "fin2", next)
	if got := waitRunning(t, n.status, "fin2", "report"); got.UID != next.UID {
		t.Fatalf("status entry of UID %s, want the new pod's %s", got.UID, next.UID)
	}
	testutil.Eventually(t, 15*time.Second, func() error {
		if d := describeWorker(n.agent, n.uid); d.Found {
			return fmt.Errorf("the old UID's worker is still there: %+v", d)
		}
		return nil
	})
}

// restartedNode is an agent restarted after its run-once pod "report"
// completed, with the pod's worker finished again.
type restartedNode struct {
	agent           *agent.Agent
	desired, status jetstream.KeyValue
	uid             types.UID // the completed pod's
}

// completedBeforeRestart runs a run-once pod "report" on node to
// completion, stops the agent and starts it again on the same root
// directory and runtime, and waits until the new worker of the pod has
// found it completed and finished.
func completedBeforeRestart(t *testing.T, node string) restartedNode {
	t.Helper()
	srv := bustest.StartServer(t, bustest.ServerOptions{})
	conn := bustest.ConnectWithProtocol(t, srv)
	cfg := testenv.AgentConfig(t, node, srv.ClientURL(), startRuntime(t))
	var n restartedNode
	var err error
	if n.desired, err = conn.JS.KeyValue(t.Context(), wire.DesiredBucket); err != nil {
		t.Fatal(err)
	}
	if n.status, err = conn.JS.KeyValue(t.Context(), wire.StatusBucket); err != nil {
		t.Fatal(err)
	}
	a := testenv.StartAgent(t, cfg)
	apply(t, n.desired, node, runOncePod("report"))
	n.uid = waitPhase(t, n.status, node, "report", v1.PodSucceeded).UID
	a.Stop()
	n.agent = testenv.StartAgent(t, cfg)
	testutil.Eventually(t, 15*time.Second, func() error {
		if d := describeWorker(n.agent, n.uid); !d.Found || d.WorkType != messages.TerminatedWork || d.Working || d.PendingUpdate != "" {
			return fmt.Errorf("pod worker %s not finished: %+v", n.uid, d)
		}
		return nil
	})
	return n
}

// describeWorker asks the agent's sync loop for the pod worker of uid. When
// the question fails it returns a found, syncing worker carrying the error,
// which satisfies neither wait above.
func describeWorker(a *agent.Agent, uid types.UID) messages.PodWorkerDescription {
	res, err := a.ActorSystem().Root.RequestFuture(a.Supervisor(), &messages.DescribePodWorker{UID: uid}, 5*time.Second).Result()
	if d, ok := res.(*messages.PodWorkerDescription); ok && err == nil {
		return *d
	}
	return messages.PodWorkerDescription{Found: true, LastSyncError: fmt.Sprintf("describe: %v (reply %T)", err, res)}
}

// runOncePod is a pod whose one container exits 0 at once and is not
// restarted.
func runOncePod(name string) *v1.Pod {
	p := sleepPod(name)
	p.Spec.RestartPolicy = v1.RestartPolicyOnFailure
	p.Spec.Containers[0].Command = []string{"true"}
	return p
}

// deleteGracefully marks the desired pod at key deleted, as
// `actorletctl delete pod` does without --now.
func deleteGracefully(t *testing.T, kv jetstream.KeyValue, key string) {
	t.Helper()
	e, err := kv.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	var pod v1.Pod
	if err := json.Unmarshal(e.Value(), &pod); err != nil {
		t.Fatal(err)
	}
	now, grace := metav1.Now(), int64(30)
	pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds = &now, &grace
	data, err := json.Marshal(&pod)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Update(context.Background(), key, data, e.Revision()); err != nil {
		t.Fatal(err)
	}
}

func waitPhase(t *testing.T, kv jetstream.KeyValue, node, name string, phase v1.PodPhase) *v1.Pod {
	t.Helper()
	var pod v1.Pod
	testutil.Eventually(t, 15*time.Second, func() error {
		e, err := kv.Get(context.Background(), wire.StatusKey(node, "default", name))
		if err != nil {
			return err
		}
		if err := json.Unmarshal(e.Value(), &pod); err != nil {
			return err
		}
		if pod.Status.Phase != phase {
			return fmt.Errorf("%s: phase %s, want %s", name, pod.Status.Phase, phase)
		}
		return nil
	})
	return &pod
}
