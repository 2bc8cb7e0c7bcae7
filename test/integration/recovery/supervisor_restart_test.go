// Package recovery tests that actorlet survives its own failures: a sync
// loop that panics is restarted by supervision, gets the desired pods back
// and adopts what is running.
package recovery

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/test/testutil"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/nats-io/nats.go/jetstream"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/cri/procruntime/proctest"
	"github.com/actorlet/actorlet/node/agent"
	"github.com/actorlet/actorlet/test/testenv"
)

// TestMain lets the process runtime re-execute this test binary as its
// per-container shim.
func TestMain(m *testing.M) { proctest.Main(m) }

// panicNow makes the injected middleware fail the supervisor once.
type panicNow struct{}

func TestSupervisorPanicIsRestartedAndAdoptsRunningPods(t *testing.T) {
	srv := bustest.StartServer(t, bustest.ServerOptions{})
	conn := bustest.ConnectWithProtocol(t, srv)
	rt := startRuntime(t)

	failOnce := func(next actor.ReceiverFunc) actor.ReceiverFunc {
		return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
			if _, ok := env.Message.(*panicNow); ok {
				panic("injected sync loop failure")
			}
			next(c, env)
		}
	}
	cfg := testenv.AgentConfig(t, "r1", srv.ClientURL(), rt)
	cfg.ReceiverMiddleware = []actor.ReceiverMiddleware{failOnce}
	a := testenv.StartAgent(t, cfg)
	ctx := t.Context()

	kv := bustest.KeyValue(t, conn.JS, wire.DesiredBucket)
	status := bustest.KeyValue(t, conn.JS, wire.StatusBucket)
	apply(t, kv, "r1", sleepPod("before"))
	before := waitRunning(t, status, "r1", "before")

	a.ActorSystem().Root.Send(a.Supervisor(), &panicNow{})
	testutil.Eventually(t, 10*time.Second, func() error {
		if n := counter(t, a, "actorlet_actor_restarts_total"); n < 1 {
			return fmt.Errorf("actor restarts = %v", n)
		}
		return nil
	})

	// The restarted loop takes new work, and the pod that ran before keeps
	// its container: adopted, not started again.
	apply(t, kv, "r1", sleepPod("after"))
	waitRunning(t, status, "r1", "after")
	// Let several resyncs of the adopted pod happen before comparing.
	time.Sleep(2 * time.Second)
	now := waitRunning(t, status, "r1", "before")
	if b, n := before.Status.ContainerStatuses[0], now.Status.ContainerStatuses[0]; b.ContainerID != n.ContainerID || n.RestartCount != 0 {
		t.Fatalf("the running pod was not adopted: container %s → %s, restarts %d", b.ContainerID, n.ContainerID, n.RestartCount)
	}
	sandboxes, err := rt.ListPodSandbox(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sandboxes) != 2 {
		t.Fatalf("%d sandboxes, want one per pod (2)", len(sandboxes))
	}

	// The restarted loop knows the pod from before: removing it from the bus
	// stops it (a loop that lost it would leave it running, unknown).
	if err := kv.Delete(ctx, wire.DesiredNodeKey("r1", "default", "before")); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 15*time.Second, func() error {
		running, err := rt.ListContainers(ctx, &runtimeapi.ContainerFilter{
			State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
			LabelSelector: map[string]string{"io.kubernetes.pod.name": "before"},
		})
		if err != nil {
			return err
		}
		if len(running) > 0 {
			return fmt.Errorf("pod %q still runs %d containers after its removal", "before", len(running))
		}
		return nil
	})
}

func startRuntime(t *testing.T) *cri.Client {
	t.Helper()
	_, c := testenv.Runtime(t, t.TempDir())
	return c
}

func sleepPod(name string) *v1.Pod {
	return &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name: "app", Image: "local/sleep", Command: []string{"sleep", "3600"},
		}}},
	}
}

func apply(t *testing.T, kv jetstream.KeyValue, node string, pod *v1.Pod) {
	t.Helper()
	data, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(context.Background(), wire.DesiredNodeKey(node, pod.Namespace, pod.Name), data); err != nil {
		t.Fatal(err)
	}
}

func waitRunning(t *testing.T, kv jetstream.KeyValue, node, name string) *v1.Pod {
	t.Helper()
	return waitRunningWithin(t, kv, node, name, 15*time.Second)
}

func waitRunningWithin(t *testing.T, kv jetstream.KeyValue, node, name string, within time.Duration) *v1.Pod {
	t.Helper()
	var pod v1.Pod
	testutil.Eventually(t, within, func() error {
		e, err := kv.Get(context.Background(), wire.StatusKey(node, "default", name))
		if err != nil {
			return err
		}
		if err := json.Unmarshal(e.Value(), &pod); err != nil {
			return err
		}
		if pod.Status.Phase != v1.PodRunning || len(pod.Status.ContainerStatuses) == 0 || pod.Status.ContainerStatuses[0].State.Running == nil {
			return fmt.Errorf("%s: phase %s", name, pod.Status.Phase)
		}
		return nil
	})
	return &pod
}

func counter(t *testing.T, a *agent.Agent, name string) float64 {
	t.Helper()
	families, err := a.MetricsGatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			var sum float64
			for _, m := range f.GetMetric() {
				sum += metricValue(m)
			}
			return sum
		}
	}
	return 0
}

func metricValue(m *dto.Metric) float64 {
	if c := m.GetCounter(); c != nil {
		return c.GetValue()
	}
	return m.GetGauge().GetValue()
}
