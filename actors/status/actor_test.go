package status

import (
	"context"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"testing"
	"time"

	"github.com/actorlet/actorlet/messages"
	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

const wait = 10 * time.Second

// spawnStatus starts a status actor over a memory sink; everything stops at
// the end of the test.
func spawnStatus(t *testing.T) (*actor.RootContext, *actor.PID, *MemorySink, *clocktesting.FakeClock) {
	t.Helper()
	sink := NewMemorySink()
	clk := clocktesting.NewFakeClock(t0.Time)
	system := actor.NewActorSystem()
	props, err := Props(Config{Sink: sink, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	pid := system.Root.Spawn(props)
	t.Cleanup(func() {
		_ = system.Root.StopFuture(pid).Wait()
		system.Shutdown()
	})
	return system.Root, pid, sink, clk
}

// list asks the actor for every status; as the reply comes after every
// message sent before it, it also marks them all handled.
func list(t *testing.T, root *actor.RootContext, pid *actor.PID) *messages.PodStatusList {
	t.Helper()
	res, err := root.RequestFuture(pid, &messages.ListPodStatuses{}, wait).Result()
	if err != nil {
		t.Fatalf("ListPodStatuses: %v", err)
	}
	l, ok := res.(*messages.PodStatusList)
	if !ok {
		t.Fatalf("ListPodStatuses replied %T", res)
	}
	return l
}

func waitFor(t *testing.T, sink *MemorySink, uid types.UID, what string, cond func(v1.PodStatus) bool) messages.PodStatusChanged {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c, err := sink.Wait(ctx, uid, cond)
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
	return c
}

func readyIs(want v1.ConditionStatus) func(v1.PodStatus) bool {
	return func(s v1.PodStatus) bool {
		c := condition(s, v1.PodReady)
		return c != nil && c.Status == want
	}
}

func TestStatusActorPublishesOnlyChanges(t *testing.T) {
	root, pid, sink, clk := spawnStatus(t)
	pod := testPod(v1.RestartPolicyAlways, containerSpec{name: "app", readiness: true})
	in := computed(v1.PodRunning, running("app", "c1"))

	root.Send(pid, &messages.PodStatusComputed{Pod: pod, Status: in})
	first := waitFor(t, sink, pod.UID, "first status", readyIs(v1.ConditionFalse))
	if first.Static || first.Pod.Name != "web" {
		t.Fatalf("first change = %+v", first)
	}

	// The same runtime view again publishes nothing.
	clk.Step(time.Second)
	root.Send(pid, &messages.PodStatusComputed{Pod: pod, Status: in})
	list(t, root, pid)
	if n := len(sink.Changes(pod.UID)); n != 1 {
		t.Fatalf("unchanged status published %d times, want once", n)
	}

	// Liveness results do not touch the status; readiness does.
	root.Send(pid, &messages.ProbeResultChanged{PodUID: pod.UID, ContainerName: "app", ContainerID: "c1", Kind: messages.Liveness, Result: messages.ProbeFailure})
	list(t, root, pid)
	if n := len(sink.Changes(pod.UID)); n != 1 {
		t.Fatalf("liveness result published a change")
	}
	clk.Step(time.Second)
	root.Send(pid, &messages.ProbeResultChanged{PodUID: pod.UID, ContainerName: "app", ContainerID: "c1", Kind: messages.Readiness, Result: messages.ProbeSuccess})
	got := waitFor(t, sink, pod.UID, "ready", readyIs(v1.ConditionTrue))
	ready := condition(got.Pod.Status, v1.PodReady)
	if want := t0.Add(2 * time.Second); !ready.LastTransitionTime.Time.Equal(want) {
		t.Fatalf("Ready transition at %v, want %v", ready.LastTransitionTime, want)
	}
	if !got.Pod.Status.ContainerStatuses[0].Ready {
		t.Fatal("container not ready after readiness success")
	}
	if n := len(sink.Changes(pod.UID)); n != 2 {
		t.Fatalf("%d changes, want 2", n)
	}

	// The pod succeeds; a later running view cannot bring it back.
	root.Send(pid, &messages.PodStatusComputed{Pod: pod, Status: computed(v1.PodSucceeded, terminated("app", "c1", 0))})
	waitFor(t, sink, pod.UID, "succeeded", func(s v1.PodStatus) bool { return s.Phase == v1.PodSucceeded })
	root.Send(pid, &messages.PodStatusComputed{Pod: pod, Status: in})
	l := list(t, root, pid)
	if len(l.Pods) != 1 || l.Pods[0].Pod.Status.Phase != v1.PodSucceeded || l.Pods[0].Pod.Status.ContainerStatuses[0].State.Terminated == nil {
		t.Fatalf("terminal pod left its phase: %+v", l.Pods)
	}
}

func TestStatusActorProbeBeforeStatus(t *testing.T) {
	root, pid, sink, _ := spawnStatus(t)
	pod := testPod(v1.RestartPolicyAlways, containerSpec{name: "app", readiness: true})
	root.Send(pid, &messages.ProbeResultChanged{PodUID: pod.UID, ContainerName: "app", ContainerID: "c1", Kind: messages.Readiness, Result: messages.ProbeSuccess})
	if l := list(t, root, pid); len(l.Pods) != 0 {
		t.Fatalf("a probe result alone published %+v", l.Pods)
	}
	root.Send(pid, &messages.PodStatusComputed{Pod: pod, Status: computed(v1.PodRunning, running("app", "c1"))})
	waitFor(t, sink, pod.UID, "ready with the earlier probe result", readyIs(v1.ConditionTrue))
}

func TestStatusActorRejectedStaticAndForgotten(t *testing.T) {
	root, pid, sink, _ := spawnStatus(t)
	rejected := testPod(v1.RestartPolicyAlways, containerSpec{name: "app"})
	static := testPod(v1.RestartPolicyAlways, containerSpec{name: "app"})
	static.UID, static.Name = "uid-static", "etcd"
	static.Annotations = map[string]string{messages.ConfigSourceAnnotation: messages.SourceFile}

	root.Send(pid, &messages.PodRejected{Pod: rejected, Reason: "OutOfcpu", Message: "Node didn't have enough resource: cpu"})
	got := waitFor(t, sink, rejected.UID, "rejection", func(s v1.PodStatus) bool { return s.Phase == v1.PodFailed })
	if got.Pod.Status.Reason != "OutOfcpu" || got.Pod.Status.Message == "" || got.Static {
		t.Fatalf("rejected status = %+v static=%v", got.Pod.Status, got.Static)
	}
	// A rejected pod never runs: a later runtime view does not change it.
	root.Send(pid, &messages.PodStatusComputed{Pod: rejected, Status: computed(v1.PodRunning, running("app", "c1"))})

	root.Send(pid, &messages.PodStatusComputed{Pod: static, Status: computed(v1.PodRunning, running("app", "c9"))})
	if s := waitFor(t, sink, static.UID, "static pod", readyIs(v1.ConditionTrue)); !s.Static {
		t.Fatal("file-sourced pod not published as static")
	}

	l := list(t, root, pid)
	if len(l.Pods) != 2 || l.Pods[0].Pod.Name != "etcd" || l.Pods[1].Pod.Status.Phase != v1.PodFailed {
		t.Fatalf("list = %+v", l.Pods)
	}
	if n := len(sink.Changes(rejected.UID)); n != 1 {
		t.Fatalf("rejected pod published %d times, want once", n)
	}

	root.Send(pid, &messages.PodForgotten{UID: rejected.UID})
	l = list(t, root, pid)
	if len(l.Pods) != 1 {
		t.Fatalf("forgotten pod still listed: %+v", l.Pods)
	}
	if r := sink.Removed(); len(r) != 1 || r[0].UID != rejected.UID {
		t.Fatalf("sink removals = %+v", r)
	}
	if _, ok := sink.Latest(rejected.UID); ok {
		t.Fatal("sink still has the forgotten pod")
	}
}

func TestStatusConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err == nil {
		t.Fatal("config without a sink validated")
	}
	if err := (Config{Sink: NewMemorySink()}).Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
}

// A graceful deletion is published even though the status is unchanged, so
// watchers see the pod terminating at once.
func TestStatusActorPublishesDeletion(t *testing.T) {
	root, pid, sink, _ := spawnStatus(t)
	pod := testPod(v1.RestartPolicyAlways, containerSpec{name: "app"})
	in := computed(v1.PodRunning, running("app", "c1"))
	root.Send(pid, &messages.PodStatusComputed{Pod: pod, Status: in})
	waitFor(t, sink, pod.UID, "first status", func(s v1.PodStatus) bool { return s.Phase == v1.PodRunning })

	deleting := pod.DeepCopy()
	now := metav1.NewTime(t0.Time)
	deleting.DeletionTimestamp = &now
	root.Send(pid, &messages.PodStatusComputed{Pod: deleting, Status: in})
	list(t, root, pid)
	changes := sink.Changes(pod.UID)
	if len(changes) != 2 || changes[1].Pod.DeletionTimestamp == nil {
		t.Fatalf("changes = %d, want the deletion published as a second change", len(changes))
	}
	root.Send(pid, &messages.PodStatusComputed{Pod: deleting, Status: in})
	list(t, root, pid)
	if n := len(sink.Changes(pod.UID)); n != 2 {
		t.Fatalf("an unchanged deleting pod was published again (%d changes)", n)
	}
}

// TestStatusActorPublishesLabelsOnlyUpdate: the same status for a pod whose
// labels (or annotations) changed is published again, so the status
// entry, which carries the pod, shows the new labels.
func TestStatusActorPublishesLabelsOnlyUpdate(t *testing.T) {
	root, pid, sink, _ := spawnStatus(t)
	pod := testPod(v1.RestartPolicyAlways, containerSpec{name: "app"})
	pod.Labels = map[string]string{"tier": "web"}
	in := computed(v1.PodRunning, running("app", "c1"))
	root.Send(pid, &messages.PodStatusComputed{Pod: pod, Status: in})
	waitFor(t, sink, pod.UID, "first status", func(s v1.PodStatus) bool { return s.Phase == v1.PodRunning })

	relabeled := pod.DeepCopy()
	relabeled.Labels = map[string]string{"tier": "web", "track": "canary"}
	root.Send(pid, &messages.PodStatusComputed{Pod: relabeled, Status: in})
	list(t, root, pid)
	latest, _ := sink.Latest(pod.UID)
	if latest.Pod.Labels["track"] != "canary" {
		t.Fatalf("after a labels-only update the published pod has labels %v, want track=canary", latest.Pod.Labels)
	}
	if n := len(sink.Changes(pod.UID)); n != 2 {
		t.Errorf("%d changes published, want 2", n)
	}
	// The same again publishes nothing.
	root.Send(pid, &messages.PodStatusComputed{Pod: relabeled.DeepCopy(), Status: in})
	list(t, root, pid)
	if n := len(sink.Changes(pod.UID)); n != 2 {
		t.Errorf("%d changes published after an identical update, want still 2", n)
	}
}
