package podactor

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/actorlet/actorlet/actors/actorutil/actortest"
	"github.com/actorlet/actorlet/actors/podactor/fake"
	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/test/testutil"
)

var (
	_ Runtime = &fake.Runtime{}
	_ Cache   = &fake.Cache{}
)

// harness runs one pod actor under a parent that answers its requests and
// keeps what it is told.
type harness struct {
	t     *testing.T
	sys   *actor.ActorSystem
	clock *clocktesting.FakeClock
	rt    *fake.Runtime
	cache *fake.Cache
	uid   types.UID
	child *actor.PID
	told  actortest.Inbox

	mu              sync.Mutex
	desired         *messages.DesiredPod
	desiredRequests int
}

// parent is the pod actor's parent: it answers GetDesiredPod and keeps
// what the actor reports.
func (h *harness) parent(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *messages.GetDesiredPod:
		h.mu.Lock()
		h.desiredRequests++
		d := h.desired
		h.mu.Unlock()
		if d == nil {
			d = &messages.DesiredPod{}
		}
		ctx.Respond(d)
	case *messages.PodSyncCompleted, *messages.PodStatusComputed, *messages.PodWorkerStateChanged:
		h.told.Add(m)
	}
}

func newHarness(t *testing.T, uid types.UID) *harness {
	t.Helper()
	h := &harness{t: t, sys: actortest.System(t), clock: clocktesting.NewFakeClock(time.Unix(1000, 0)),
		rt: fake.NewRuntime(), cache: fake.NewCache(), uid: uid}
	h.rt.UseStatuses(h.cache)
	props, err := Props(Config{Runtime: h.rt, Cache: h.cache, Clock: h.clock}, uid)
	if err != nil {
		t.Fatalf("props: %v", err)
	}
	h.child = actortest.SpawnChild(t, h.sys, props, h.parent)
	return h
}

func (h *harness) send(m any) { h.sys.Root.Send(h.child, m) }

// messagesOf returns what the actor told its parent, of type T.
func messagesOf[T any](h *harness) []T { return actortest.Of[T](&h.told) }

func (h *harness) describe() *messages.PodWorkerDescription {
	h.t.Helper()
	res, err := h.sys.Root.RequestFuture(h.child, &messages.DescribePodWorker{UID: h.uid}, 5*time.Second).Result()
	if err != nil {
		h.t.Fatalf("describe: %v", err)
	}
	return res.(*messages.PodWorkerDescription)
}

// states returns the sequence of reported work types (and finished).
func (h *harness) states() []string {
	var out []string
	for _, s := range messagesOf[*messages.PodWorkerStateChanged](h) {
		v := s.WorkType.String()
		if s.Finished {
			v = "finished"
		}
		out = append(out, v)
	}
	return out
}

// eventually polls cond until it holds or 5 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Until(t, 5*time.Second, what, cond)
}

// never checks that cond stays false for a short while, after the actor
// processed everything sent so far (a describe round-trip).
func (h *harness) never(what string, cond func() bool) {
	h.t.Helper()
	h.describe()
	for i := 0; i < 20; i++ {
		if cond() {
			h.t.Fatalf("unexpected: %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func int64p(v int64) *int64 { return &v }

// testPod returns a pod with the given grace period (nil: default).
func testPod(uid types.UID, gen int64, grace *int64) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: uid, Name: "web-" + string(uid), Namespace: "default", Generation: gen,
			CreationTimestamp: metav1.NewTime(time.Unix(500, 0))},
		Spec: v1.PodSpec{TerminationGracePeriodSeconds: grace, RestartPolicy: v1.RestartPolicyAlways,
			Containers: []v1.Container{{Name: "app", Image: "busybox"}}},
		Status: v1.PodStatus{Phase: v1.PodPending},
	}
}

func deleted(p *v1.Pod, grace int64) *v1.Pod {
	cp := p.DeepCopy()
	now := metav1.NewTime(time.Unix(2000, 0))
	cp.DeletionTimestamp = &now
	cp.DeletionGracePeriodSeconds = &grace
	return cp
}

func upd(t messages.UpdateType, p *v1.Pod) *messages.SyncPod {
	return &messages.SyncPod{UpdateType: t, Pod: p, StartTime: time.Unix(1000, 0)}
}

func graceOf(c fake.Call) string {
	if c.Grace == nil {
		return "nil"
	}
	return fmt.Sprint(*c.Grace)
}

var errCanceled = context.Canceled

// createRunning puts a running container c1 of app in the cache, creates
// pod u1 and waits for its first sync; it returns the pod.
func (h *harness) createRunning() *v1.Pod {
	h.t.Helper()
	h.cache.Set(&cri.PodStatus{ID: h.uid, ContainerStatuses: []*cri.ContainerStatus{{ID: "c1", Name: "app", State: cri.ContainerStateRunning}}})
	p := testPod(h.uid, 1, nil)
	h.send(upd(messages.SyncPodCreate, p))
	eventually(h.t, "first sync", func() bool { return len(messagesOf[*messages.PodSyncCompleted](h)) == 1 })
	return p
}

// secondSyncWaitsForTheFirst steps the clock and syncs again (the first
// sync completed at 1000 s): the second sync waits for a status newer than
// the first sync's completion.
func (h *harness) secondSyncWaitsForTheFirst() {
	h.t.Helper()
	h.clock.Step(time.Second)
	h.send(upd(messages.SyncPodSync, testPod(h.uid, 1, nil)))
	eventually(h.t, "second sync", func() bool { return len(messagesOf[*messages.PodSyncCompleted](h)) == 2 })
	if mt := h.cache.MinTimes(h.uid); len(mt) != 2 || !mt[1].Equal(time.Unix(1000, 0)) {
		h.t.Fatalf("second sync minTime = %v, want the first sync's completion time", mt)
	}
}
