package supervisor

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/actorlet/actorlet/actors/actorutil/actortest"
	"github.com/actorlet/actorlet/actors/podactor/fake"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/test/testutil"
)

var (
	_ Runtime = &fake.Runtime{}
	_ Cache   = &fake.Cache{}
)

// inboxProps makes in stand in for the status or prober child.
func inboxProps(in *actortest.Inbox) func() (*actor.Props, error) {
	return func() (*actor.Props, error) { return actor.PropsFromFunc(in.Receive), nil }
}

// harness runs a supervisor with real pod actors on a fake runtime.
type harness struct {
	t      *testing.T
	sys    *actor.ActorSystem
	clock  *clocktesting.FakeClock
	rt     *fake.Runtime
	cache  *fake.Cache
	status *actortest.Inbox
	prober *actortest.Inbox
	pid    *actor.PID
}

func newHarness(t *testing.T, tweak func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, sys: actortest.System(t), clock: clocktesting.NewFakeClock(time.Unix(1000, 0)),
		rt: fake.NewRuntime(), cache: fake.NewCache(), status: &actortest.Inbox{}, prober: &actortest.Inbox{}}
	h.rt.UseStatuses(h.cache)
	cfg := Config{Runtime: h.rt, Cache: h.cache, Clock: h.clock, NodeName: "node-1",
		NodeLabels: map[string]string{"zone": "a"},
		Children:   Children{Status: inboxProps(h.status), Prober: inboxProps(h.prober)}}
	if tweak != nil {
		tweak(&cfg)
	}
	props, err := Props(cfg)
	if err != nil {
		t.Fatalf("supervisor props: %v", err)
	}
	pid, err := h.sys.Root.SpawnNamed(props, "supervisor")
	if err != nil {
		t.Fatalf("spawn supervisor: %v", err)
	}
	h.pid = pid
	t.Cleanup(func() { _ = h.sys.Root.StopFuture(pid).Wait() })
	eventually(t, "tickers registered", func() bool { return h.clock.Waiters() >= 2 })
	return h
}

func (h *harness) send(m any) { h.sys.Root.Send(h.pid, m) }

func (h *harness) ask(m any) any {
	h.t.Helper()
	res, err := h.sys.Root.RequestFuture(h.pid, m, 5*time.Second).Result()
	if err != nil {
		h.t.Fatalf("request %T: %v", m, err)
	}
	return res
}

func (h *harness) describe(uid types.UID) *messages.PodWorkerDescription {
	h.t.Helper()
	return h.ask(&messages.DescribePodWorker{UID: uid}).(*messages.PodWorkerDescription)
}

// counted reports whether the node still counts the pod: as a running pod
// or in the capacity it reports (GetNodeConditions).
func (h *harness) counted(uid types.UID) (bool, *messages.NodeConditions) {
	h.t.Helper()
	nc := h.ask(&messages.GetNodeConditions{}).(*messages.NodeConditions)
	for _, p := range nc.Pods {
		if p.UID == uid {
			return true, nc
		}
	}
	return nc.RunningPods > 0, nc
}

// settle waits until the supervisor processed everything sent so far.
func (h *harness) settle() { h.ask(&messages.GetNodeConditions{}) }

// housekeep steps the clock by one housekeeping period and waits for the
// pass (its runtime part ends with GC) to finish.
func (h *harness) housekeep() {
	h.t.Helper()
	before := h.rt.Count(fake.OpGC)
	h.clock.Step(2 * time.Second)
	eventually(h.t, "housekeeping pass", func() bool { return h.rt.Count(fake.OpGC) > before })
	h.settle()
}

func (h *harness) add(pods ...*v1.Pod) {
	h.send(&messages.PodUpdate{Op: messages.OpAdd, Pods: pods, Source: messages.SourceRemote})
}

func (h *harness) syncsOf(uid types.UID) int {
	n := 0
	for _, c := range h.rt.Calls(fake.OpSyncPod) {
		if c.UID == uid {
			n++
		}
	}
	return n
}

func (h *harness) killsOf(uid types.UID) []fake.Call {
	var out []fake.Call
	for _, c := range h.rt.Calls(fake.OpKillPod) {
		if c.UID == uid {
			out = append(out, c)
		}
	}
	return out
}

// waitRejections waits until the supervisor told the status actor of n
// rejected pods in all.
func (h *harness) waitRejections(what string, n int) {
	h.t.Helper()
	eventually(h.t, what, func() bool { return len(actortest.Of[*messages.PodRejected](h.status)) == n })
}

// never checks cond stays false after the supervisor settled.
func (h *harness) never(what string, cond func() bool) {
	h.t.Helper()
	h.settle()
	for i := 0; i < 25; i++ {
		if cond() {
			h.t.Fatalf("unexpected: %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Until(t, 5*time.Second, what, cond)
}

// addRunning adds pod uid (named as its UID, created at 1 s) with phase
// Running, and returns it.
func (h *harness) addRunning(uid string) *v1.Pod {
	h.t.Helper()
	p := newPod(uid, uid, 1)
	p.Status.Phase = v1.PodRunning
	h.add(p)
	return p
}

// addRunningSynced adds a running pod uid (addRunning) and waits for its
// sync: one, as a running pod is not synced again at once.
func (h *harness) addRunningSynced(uid string) *v1.Pod {
	h.t.Helper()
	p := h.addRunning(uid)
	eventually(h.t, uid+" synced", func() bool { return h.syncsOf(types.UID(uid)) == 1 })
	return p
}

func newPod(uid, name string, created int64) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: name, Namespace: "default",
			CreationTimestamp: metav1.NewTime(time.Unix(created, 0))},
		Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways,
			Containers: []v1.Container{{Name: "app", Image: "busybox"}}},
		Status: v1.PodStatus{Phase: v1.PodPending},
	}
}

// jobPod makes p a pod that may succeed (restartPolicy Never).
func jobPod(p *v1.Pod) *v1.Pod {
	p.Spec.RestartPolicy = v1.RestartPolicyNever
	return p
}

func withRequests(p *v1.Pod, cpu, mem string) *v1.Pod {
	p.Spec.Containers[0].Resources.Requests = v1.ResourceList{
		v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
	return p
}

func withNodeSelector(p *v1.Pod, sel map[string]string) *v1.Pod {
	p.Spec.NodeSelector = sel
	return p
}

func withHostPort(p *v1.Pod, port int32) *v1.Pod {
	p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: port}}
	return p
}

func static(p *v1.Pod) *v1.Pod {
	p.Annotations = map[string]string{messages.ConfigSourceAnnotation: messages.SourceFile}
	return p
}

func deletedPod(p *v1.Pod, grace int64) *v1.Pod {
	cp := p.DeepCopy()
	now := metav1.NewTime(time.Unix(2000, 0))
	cp.DeletionTimestamp, cp.DeletionGracePeriodSeconds = &now, &grace
	return cp
}

func int64p(v int64) *int64 { return &v }

func finished(h *harness, uid types.UID) bool {
	d := h.describe(uid)
	return d.Found && d.WorkType == messages.TerminatedWork && !d.Working
}

// addSynced adds pod uid (named as its UID, created at 1 s) and waits for
// its first sync; it returns the pod.
func (h *harness) addSynced(uid string) *v1.Pod {
	h.t.Helper()
	p := newPod(uid, uid, 1)
	h.add(p)
	eventually(h.t, uid+" synced", func() bool { return h.syncsOf(types.UID(uid)) > 0 })
	return p
}

// addFinished adds a run-once pod uid whose runtime reports it Succeeded,
// and waits until its worker finished; it returns the pod.
func (h *harness) addFinished(uid string) *v1.Pod {
	h.t.Helper()
	h.rt.SetPhase(types.UID(uid), v1.PodSucceeded)
	p := jobPod(newPod(uid, uid, 1))
	h.add(p)
	eventually(h.t, uid+" finished", func() bool { return finished(h, types.UID(uid)) })
	return p
}
