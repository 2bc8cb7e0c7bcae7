package recovery

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/test/testenv"
	"github.com/actorlet/actorlet/test/testutil"
)

// A pod that ended Failed while its restartPolicy is Always (evicted, or
// past its active deadline) stays Failed across an agent restart, as the
// kubelet never runs a pod whose API status is terminal: the restarted
// agent finds its last published status terminal, its worker starts
// terminal, and no container of it runs again.
func TestFailedPodStaysFailedAfterAgentRestart(t *testing.T) {
	tests := []struct {
		name   string
		pod    func() *v1.Pod
		fail   func(t *testing.T, c *wire.Client, node string)
		reason string
	}{
		{"evicted", func() *v1.Pod { return sleepPod("evicted") }, func(t *testing.T, c *wire.Client, node string) {
			grace := int64(0)
			if _, err := c.Evict(t.Context(), node, "default", "evicted", &grace, "NodePressure"); err != nil {
				t.Fatalf("evict: %v", err)
			}
		}, "NodePressure"},
		{"deadline", func() *v1.Pod {
			p := sleepPod("deadline")
			deadline := int64(1)
			p.Spec.ActiveDeadlineSeconds = &deadline
			return p
		}, nil, "DeadlineExceeded"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := fmt.Sprintf("term%d", i)
			srv := bustest.StartServer(t, bustest.ServerOptions{})
			conn := bustest.ConnectWithProtocol(t, srv)
			rt := startRuntime(t)
			cfg := testenv.AgentConfig(t, node, srv.ClientURL(), rt)
			desired, err := conn.JS.KeyValue(t.Context(), wire.DesiredBucket)
			if err != nil {
				t.Fatal(err)
			}
			status, err := conn.JS.KeyValue(t.Context(), wire.StatusBucket)
			if err != nil {
				t.Fatal(err)
			}
			a := testenv.StartAgent(t, cfg)
			pod := tt.pod()
			pod.Spec.RestartPolicy = v1.RestartPolicyAlways
			apply(t, desired, node, pod)
			waitRunning(t, status, node, pod.Name)
			if tt.fail != nil {
				tt.fail(t, &wire.Client{NC: conn.NC, Timeout: 20 * time.Second}, node)
			}
			failed := waitPhase(t, status, node, pod.Name, v1.PodFailed)
			if failed.Status.Reason != tt.reason {
				t.Fatalf("reason %q before the restart, want %q", failed.Status.Reason, tt.reason)
			}
			before := containerIDs(t, rt)
			a.Stop()

			a = testenv.StartAgent(t, cfg)
			testutil.Eventually(t, 15*time.Second, func() error {
				if d := describeWorker(a, failed.UID); !d.Found || d.WorkType != messages.TerminatedWork || d.Working || d.PendingUpdate != "" {
					return fmt.Errorf("pod worker %s not finished: %+v", failed.UID, d)
				}
				return nil
			})
			for _, id := range containerIDs(t, rt) {
				if !slices.Contains(before, id) {
					t.Errorf("container %s created after the restart (before: %v): the failed pod ran again", id, before)
				}
			}
			got := lastStatus(t, status, node, pod.Name)
			if got.UID != failed.UID || got.Status.Phase != v1.PodFailed || got.Status.Reason != tt.reason {
				t.Errorf("status after the restart: UID %s phase %s reason %q, want %s Failed %q",
					got.UID, got.Status.Phase, got.Status.Reason, failed.UID, tt.reason)
			}
			for _, c := range got.Status.Conditions {
				if c.Type == v1.PodReady && c.Status == v1.ConditionTrue {
					t.Errorf("Ready is True after the restart: %+v", c)
				}
			}
		})
	}
}

// containerIDs lists every container the runtime knows, in any state.
func containerIDs(t *testing.T, rt *cri.Client) []string {
	t.Helper()
	list, err := rt.ListContainers(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 0, len(list))
	for _, c := range list {
		ids = append(ids, c.GetId())
	}
	slices.Sort(ids)
	return ids
}

// lastStatus reads the status entry of pod name on node.
func lastStatus(t *testing.T, kv jetstream.KeyValue, node, name string) *v1.Pod {
	t.Helper()
	e, err := kv.Get(t.Context(), wire.StatusKey(node, "default", name))
	if err != nil {
		t.Fatal(err)
	}
	var pod v1.Pod
	if err := json.Unmarshal(e.Value(), &pod); err != nil {
		t.Fatal(err)
	}
	return &pod
}
