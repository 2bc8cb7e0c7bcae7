package pleg

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critesting "k8s.io/cri-api/pkg/apis/testing"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages"
)

// noEventsRuntime is a runtime like containerd 1.6: GetContainerEvents is
// Unimplemented.
type noEventsRuntime struct {
	*critesting.FakeRuntimeService
	mu       sync.Mutex
	attempts int
}

func (r *noEventsRuntime) GetContainerEvents(context.Context, chan *runtimeapi.ContainerEventResponse, func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attempts++
	return status.Error(codes.Unimplemented, "unknown method GetContainerEvents")
}

func (r *noEventsRuntime) calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attempts
}

// streamingRuntime streams the events a test pushes until the test breaks
// the stream.
type streamingRuntime struct {
	*critesting.FakeRuntimeService
	events chan *runtimeapi.ContainerEventResponse
	breaks chan error

	mu       sync.Mutex
	attempts int
	// flip makes every other Status answer "not ready", so every poll
	// result the PLEG handles reaches its parent as a RuntimeHealthChanged:
	// a test sees that a tick was handled to its end.
	flip     bool
	statuses int
	// gate, when set, holds the stream's establishment until closed.
	gate chan struct{}
}

// Status answers as the fake, every other time not ready when flip is set.
func (r *streamingRuntime) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	r.mu.Lock()
	r.statuses++
	notReady := r.flip && r.statuses%2 == 0
	r.mu.Unlock()
	resp, err := r.FakeRuntimeService.Status(ctx, verbose)
	if err != nil || !notReady {
		return resp, err
	}
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: false, Reason: "Flipped"},
		{Type: runtimeapi.NetworkReady, Status: true},
	}}}, nil
}

func newStreamingRuntime(fake *critesting.FakeRuntimeService) *streamingRuntime {
	return &streamingRuntime{FakeRuntimeService: fake, events: make(chan *runtimeapi.ContainerEventResponse), breaks: make(chan error)}
}

func (r *streamingRuntime) GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, established func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	r.mu.Lock()
	r.attempts++
	gate := r.gate
	r.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	established(nil)
	for {
		select {
		case ev := <-r.events:
			select {
			case ch <- ev:
			case <-ctx.Done():
				return ctx.Err()
			}
		case err := <-r.breaks:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (r *streamingRuntime) calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attempts
}

func TestEventStreamUnimplementedStaysOnRelisting(t *testing.T) {
	cfg, fake, lister, clk := newTestConfig()
	noEvents := &noEventsRuntime{FakeRuntimeService: fake}
	cfg.CRI = noEvents
	fake.SetFakeContainers([]*critesting.FakeContainer{fakeContainer("u1", "c1", runtimeapi.ContainerState_CONTAINER_RUNNING)})
	rec := spawnPLEG(t, cfg)

	eventually(t, wait, "stream attempt", func() bool { return noEvents.calls() == 1 })
	eventually(t, wait, "relist event", func() bool {
		return rec.hasEvent(messages.PodLifecycleEvent{PodUID: "u1", Type: messages.ContainerStarted, ContainerID: "c1"})
	})
	// Relisting continues at RelistPeriod, and the stream is never retried.
	for i := 0; i < 5; i++ {
		calls := lister.calls()
		clk.Step(time.Second)
		eventually(t, wait, "relist each period", func() bool { return lister.calls() > calls })
	}
	if got := noEvents.calls(); got != 1 {
		t.Fatalf("GetContainerEvents called %d times after Unimplemented, want 1", got)
	}
}

// closingRuntime delegates to the upstream fake, whose GetContainerEvents
// returns at once without establishing a stream, and counts the attempts.
type closingRuntime struct {
	*critesting.FakeRuntimeService
	mu       sync.Mutex
	attempts []time.Time
	clock    interface{ Now() time.Time }
}

func (r *closingRuntime) GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, cb func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	r.mu.Lock()
	r.attempts = append(r.attempts, r.clock.Now())
	r.mu.Unlock()
	return r.FakeRuntimeService.GetContainerEvents(ctx, ch, cb)
}

func (r *closingRuntime) calls() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.attempts...)
}

func TestEventStreamThatNeverEstablishesIsRetriedWithBackoff(t *testing.T) {
	cfg, fake, lister, clk := newTestConfig()
	closing := &closingRuntime{FakeRuntimeService: fake, clock: clk}
	cfg.CRI = closing
	spawnPLEG(t, cfg)
	eventually(t, wait, "first relist and stream attempt", func() bool { return lister.calls() > 0 && len(closing.calls()) == 1 })
	// Relisting goes on every period while the stream is retried after 1s,
	// 2s, 4s: the gaps between attempts double.
	for len(closing.calls()) < 4 {
		calls := lister.calls()
		clk.Step(500 * time.Millisecond)
		clk.Step(500 * time.Millisecond)
		eventually(t, wait, "relisting every period", func() bool { return lister.calls() > calls })
		if clk.Since(t0) > time.Minute {
			t.Fatalf("stream attempts %v: not retried", closing.calls())
		}
	}
	at := closing.calls()
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		if gap := at[i+1].Sub(at[i]); gap < want {
			t.Errorf("attempt %d came %s after the previous, want at least %s", i+2, gap, want)
		}
	}
}

func containerEvent(uid, id string, typ runtimeapi.ContainerEventType) *runtimeapi.ContainerEventResponse {
	sb := fakeSandbox(uid, runtimeapi.PodSandboxState_SANDBOX_READY)
	return &runtimeapi.ContainerEventResponse{
		ContainerId:        id,
		ContainerEventType: typ,
		CreatedAt:          t0.UnixNano(),
		PodSandboxStatus:   &sb.PodSandboxStatus,
	}
}

func TestEventedPLEG(t *testing.T) {
	cfg, fake, lister, clk := newTestConfig()
	cfg.EventedRelistPeriod = 10 * time.Second
	stream := newStreamingRuntime(fake)
	cfg.CRI = stream
	var relisted atomic.Int32 // relists the actor has seen finish
	cfg.Observer = func(RelistObservation) { relisted.Add(1) }
	rec := &recorder{}
	defer observeEvents(t, &cfg, rec.events)()
	rec = spawnRecorder(t, cfg, rec)

	eventually(t, wait, "stream established and first relist", func() bool { return stream.calls() == 1 && lister.calls() == 1 })

	// An event refreshes the pod in the cache, then becomes a lifecycle fact.
	fake.SetFakeContainers([]*critesting.FakeContainer{fakeContainer("u1", "c1", runtimeapi.ContainerState_CONTAINER_RUNNING)})
	started := messages.PodLifecycleEvent{PodUID: "u1", Type: messages.ContainerStarted, ContainerID: "c1"}
	var cachedAtEvent bool
	var mu sync.Mutex
	rec.mu.Lock()
	rec.onEvent = func(e messages.PodLifecycleEvent) {
		if e == started {
			s, err := cfg.Cache.Get("u1")
			mu.Lock()
			cachedAtEvent = err == nil && s.FindContainerStatusByID("c1") != nil
			mu.Unlock()
		}
	}
	rec.mu.Unlock()
	stream.events <- containerEvent("u1", "c1", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	eventually(t, wait, "ContainerStarted from the stream", func() bool { return rec.hasEvent(started) })
	mu.Lock()
	if !cachedAtEvent {
		t.Fatal("cache did not hold the pod's status when the event arrived")
	}
	mu.Unlock()

	for _, tc := range []struct {
		typ  runtimeapi.ContainerEventType
		id   string
		want messages.PodLifecycleEvent
	}{
		{runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, "c1", messages.PodLifecycleEvent{PodUID: "u1", Type: messages.ContainerDied, ContainerID: "c1"}},
		{runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, "c1", messages.PodLifecycleEvent{PodUID: "u1", Type: messages.ContainerRemoved, ContainerID: "c1"}},
		{runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, "sb-u1", messages.PodLifecycleEvent{PodUID: "u1", Type: messages.SandboxChanged}},
	} {
		stream.events <- containerEvent("u1", tc.id, tc.typ)
		eventually(t, wait, tc.want.String(), func() bool { return rec.hasEvent(tc.want) })
	}

	// While evented, the relist runs only every EventedRelistPeriod. Each
	// tick polls the runtime status, whose answer flips between ready and
	// not ready: its report to the parent shows the tick was handled to the
	// end. (Waiting for the poll's call alone raced: the next tick could
	// arrive before the poll's result, and a tick skips its poll while one
	// is in flight.)
	stream.mu.Lock()
	stream.flip = true
	stream.mu.Unlock()
	for i := 0; i < 9; i++ {
		reports := len(rec.runtimeHealth())
		clk.Step(time.Second)
		eventually(t, wait, "tick handled", func() bool { return len(rec.runtimeHealth()) > reports })
	}
	if got := lister.calls(); got != 1 {
		t.Fatalf("relisted %d times within the evented period, want 1", got)
	}
	// The tenth second: the safety-net relist is due. One step only (a
	// loop of steps until it shows could pass the next period too on a
	// loaded machine, and relist a third time before the stream breaks).
	clk.Step(time.Second)
	eventually(t, wait, "safety-net relist", func() bool { return lister.calls() == 2 })
	// A relist starts only once the actor saw the last one finish (a
	// relist in flight makes the next one skip): wait for that each time.
	eventually(t, wait, "safety-net relist done", func() bool { return relisted.Load() == 2 })

	// The stream breaks: relist at once, then every RelistPeriod. Its
	// retry (after a back-off of one second, like the relist period) is
	// held until then: established first, it would make the tick evented.
	gate := make(chan struct{})
	stream.mu.Lock()
	stream.gate = gate
	stream.mu.Unlock()
	stream.breaks <- errors.New("connection reset")
	eventually(t, wait, "immediate relist after the stream broke", func() bool { return lister.calls() == 3 && relisted.Load() == 3 })
	clk.Step(time.Second)
	eventually(t, wait, "relisting at RelistPeriod", func() bool { return lister.calls() >= 4 })
	// ... and the stream is retried after its back-off.
	eventually(t, wait, "stream retried", func() bool { return stream.calls() == 2 })
	close(gate)
	stream.events <- containerEvent("u1", "c3", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	eventually(t, wait, "events from the new stream", func() bool {
		return rec.hasEvent(messages.PodLifecycleEvent{PodUID: "u1", Type: messages.ContainerStarted, ContainerID: "c3"})
	})
}

// While the event stream is up and idle, the cache-wide time advances every
// relist period without a relist, so pod workers waiting for status newer
// than their last sync are not held until the safety-net relist.
func TestEventedPLEGKeepsCacheFreshBetweenRelists(t *testing.T) {
	cfg, fake, lister, clk := newTestConfig()
	cfg.EventedRelistPeriod = time.Minute
	stream := newStreamingRuntime(fake)
	cfg.CRI = stream
	spawnPLEG(t, cfg)
	eventually(t, wait, "stream established and first relist", func() bool { return stream.calls() == 1 && lister.calls() == 1 })

	lastSync := clk.Now().Add(500 * time.Millisecond)
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := cfg.Cache.GetNewerThan(ctx, "u1", lastSync)
		got <- err
	}()
	// Step the clock tick by tick until the waiter is released; it must be
	// within a few relist periods, long before the minute-long relist.
	deadline := time.Now().Add(4 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-got:
			if err != nil {
				t.Fatalf("GetNewerThan: %v", err)
			}
			if n := lister.calls(); n != 1 {
				t.Fatalf("relisted %d times; freshness must come from the idle stream", n)
			}
			return
		default:
		}
		clk.Step(cfg.RelistPeriod)
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("cache never became newer than the last sync while the stream was idle")
}

// An event of a pod not labelled with this node (another agent sharing the
// runtime, another CRI client's pod) is neither inspected nor reported:
// relists list only this node's pods, and events follow them.
func TestEventOfAnotherNodesPodIsIgnored(t *testing.T) {
	cfg, fake, lister, _ := newTestConfig()
	cfg.NodeName = "n1"
	stream := newStreamingRuntime(fake)
	cfg.CRI = stream
	rec := spawnPLEG(t, cfg)
	eventually(t, wait, "stream established and first relist", func() bool { return stream.calls() == 1 && lister.calls() == 1 })

	foreign := containerEvent("u2", "c2", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	foreign.PodSandboxStatus.Labels = map[string]string{cri.LabelNode: "n2"}
	stream.events <- foreign
	stream.events <- containerEvent("u3", "c3", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT) // no node label
	own := containerEvent("u1", "c1", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	own.PodSandboxStatus.Labels = map[string]string{cri.LabelNode: "n1"}
	stream.events <- own
	eventually(t, wait, "the own pod's event", func() bool {
		return rec.hasEvent(messages.PodLifecycleEvent{PodUID: "u1", Type: messages.ContainerStarted, ContainerID: "c1"})
	})
	for _, uid := range []types.UID{"u2", "u3"} {
		for _, ev := range rec.events() {
			if ev.PodUID == uid {
				t.Fatalf("pod %s, not this node's, was reported: %v", uid, ev)
			}
		}
		cfg.Cache.mu.Lock()
		_, inspected := cfg.Cache.pods[uid]
		cfg.Cache.mu.Unlock()
		if inspected {
			t.Fatalf("pod %s, not this node's, was inspected into the cache", uid)
		}
	}
}

// A container's creation is no lifecycle event and costs no inspection, as
// in the kubelet's PLEGs: the agent created it, and its start or exit
// follows.
func TestCreatedEventIsNotInspectedOrReported(t *testing.T) {
	cfg, fake, lister, _ := newTestConfig()
	stream := newStreamingRuntime(fake)
	cfg.CRI = stream
	rec := spawnPLEG(t, cfg)
	eventually(t, wait, "stream established and first relist", func() bool { return stream.calls() == 1 && lister.calls() == 1 })

	stream.events <- containerEvent("u2", "c2", runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT)
	stream.events <- containerEvent("u1", "c1", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	eventually(t, wait, "the start's event", func() bool {
		return rec.hasEvent(messages.PodLifecycleEvent{PodUID: "u1", Type: messages.ContainerStarted, ContainerID: "c1"})
	})
	if rec.hasEvent(messages.PodLifecycleEvent{PodUID: "u2", Type: messages.ContainerChanged, ContainerID: "c2"}) {
		t.Fatal("a creation was reported")
	}
	cfg.Cache.mu.Lock()
	_, inspected := cfg.Cache.pods["u2"]
	cfg.Cache.mu.Unlock()
	if inspected {
		t.Fatal("a creation was inspected into the cache")
	}
}

// Events that queue while the PLEG inspects a pod are taken together: each
// of their pods is inspected once, after its events arrived, and every
// event is still reported, in the order it came (a 100-pod teardown sends
// about five events a pod).
func TestQueuedEventsInspectEachPodOnce(t *testing.T) {
	cfg, fake, lister, _ := newTestConfig()
	stream := newStreamingRuntime(fake)
	cfg.CRI = stream
	release := lister.hold("u0")
	rec := spawnPLEG(t, cfg)
	eventually(t, wait, "stream established and first relist", func() bool { return stream.calls() == 1 && lister.calls() == 1 })

	stream.events <- containerEvent("u0", "c0", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	eventually(t, wait, "u0's inspection under way", func() bool { return lister.statusCallsOf("u0") == 1 })
	u1 := []messages.PodLifecycleEvent{
		{PodUID: "u1", Type: messages.ContainerStarted, ContainerID: "c1"},
		{PodUID: "u1", Type: messages.ContainerDied, ContainerID: "c1"},
		{PodUID: "u1", Type: messages.ContainerRemoved, ContainerID: "c1"},
	}
	for _, typ := range []runtimeapi.ContainerEventType{
		runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT,
		runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT,
		runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT,
	} {
		stream.events <- containerEvent("u1", "c1", typ)
	}
	stream.events <- containerEvent("u2", "c2", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	// The stream hands events on one at a time: once it took this one,
	// the ones before it are queued.
	stream.events <- containerEvent("u3", "c3", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	release()

	eventually(t, wait, "every event reported", func() bool {
		return rec.hasEvent(u1[2]) && rec.hasEvent(messages.PodLifecycleEvent{PodUID: "u2", Type: messages.ContainerStarted, ContainerID: "c2"}) &&
			rec.hasEvent(messages.PodLifecycleEvent{PodUID: "u3", Type: messages.ContainerStarted, ContainerID: "c3"})
	})
	if n := lister.statusCallsOf("u1"); n != 1 {
		t.Errorf("pod u1 with three queued events was inspected %d times, want 1", n)
	}
	if n := lister.statusCallsOf("u2"); n != 1 {
		t.Errorf("pod u2 was inspected %d times, want 1", n)
	}
	var got []messages.PodLifecycleEvent
	for _, e := range rec.events() {
		if e.PodUID == "u1" {
			got = append(got, e)
		}
	}
	if len(got) != len(u1) || got[0] != u1[0] || got[1] != u1[1] || got[2] != u1[2] {
		t.Errorf("pod u1's events = %v, want %v", got, u1)
	}
}

// eventStatusLister is a podLister that reads a pod's status from an
// event that carries it, as kuberuntime.Manager.PodStatusFromEvent does
// (its own test compares that with a read of the runtime).
type eventStatusLister struct{ *podLister }

func (eventStatusLister) PodStatusFromEvent(ev *runtimeapi.ContainerEventResponse) (*cri.PodStatus, bool) {
	ss := ev.GetPodSandboxStatus()
	if ev.GetCreatedAt() == 0 || ss.GetId() == "" {
		return nil, false
	}
	st := &cri.PodStatus{ID: types.UID(ss.GetMetadata().GetUid()), SandboxStatuses: []*runtimeapi.PodSandboxStatus{ss}}
	for _, c := range ev.GetContainersStatuses() {
		st.ContainerStatuses = append(st.ContainerStatuses, &cri.ContainerStatus{ID: c.GetId(), State: cri.ContainerStateOf(c.GetState())})
	}
	return st, true
}

// withContainers is ev carrying the statuses of containers (id → state)
// of its sandbox, made by the runtime at at.
func withContainers(ev *runtimeapi.ContainerEventResponse, at time.Time, containers map[string]runtimeapi.ContainerState) *runtimeapi.ContainerEventResponse {
	ev.CreatedAt = at.UnixNano()
	for id, state := range containers {
		ev.ContainersStatuses = append(ev.ContainersStatuses, &runtimeapi.ContainerStatus{Id: id, State: state})
	}
	return ev
}

// An event that carries its pod's status (containerd 2.x, the process
// runtime) refreshes the cache with no runtime read, stamped with the
// time the runtime made it, when it covers what the cache knows of the
// pod (a container's removal: but the removed one); one that does not (a
// container it lacks), a sandbox's removal, or one a client assembled is
// read from the runtime as before.
func TestEventCarryingStatusIsCachedWithoutRead(t *testing.T) {
	cfg, fake, lister, clk := newTestConfig()
	cfg.Runtime = eventStatusLister{lister}
	stream := newStreamingRuntime(fake)
	cfg.CRI = stream
	rec := spawnPLEG(t, cfg)
	eventually(t, wait, "stream established and first relist", func() bool { return stream.calls() == 1 && lister.calls() == 1 })
	running := runtimeapi.ContainerState_CONTAINER_RUNNING
	cached := func(id string) cri.ContainerState {
		st, _ := cfg.Cache.Get("u1")
		if cs := st.FindContainerStatusByID(id); cs != nil {
			return cs.State
		}
		return "absent"
	}

	made := clk.Now().Add(time.Second)
	stream.events <- withContainers(containerEvent("u1", "c1", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT), made, map[string]runtimeapi.ContainerState{"c1": running})
	eventually(t, wait, "ContainerStarted", func() bool {
		return rec.hasEvent(messages.PodLifecycleEvent{PodUID: "u1", Type: messages.ContainerStarted, ContainerID: "c1"})
	})
	if got := cached("c1"); got != cri.ContainerStateRunning {
		t.Fatalf("cached c1 %q, want running from the event", got)
	}
	if n := lister.statusCallsOf("u1"); n != 0 {
		t.Fatalf("the pod was read %d times for an event that carried its status", n)
	}
	// A runtime clock ahead of the agent's (here a second) never stamps
	// the entry past its arrival: it would hold the pod's later reads off
	// until then.
	stampOf := func(uid types.UID) time.Time {
		cfg.Cache.mu.Lock()
		defer cfg.Cache.mu.Unlock()
		return cfg.Cache.pods[uid].modified
	}
	if got := stampOf("u1"); !got.Equal(clk.Now()) {
		t.Fatalf("u1's snapshot stamped %s, want its arrival %s", got, clk.Now())
	}
	// A snapshot made before it arrived is stamped with its making: it
	// must not pass for newer than a sync that ran between the two.
	madeU5 := clk.Now().Add(-time.Minute)
	stream.events <- withContainers(containerEvent("u5", "c5", runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT), madeU5, map[string]runtimeapi.ContainerState{"c5": runtimeapi.ContainerState_CONTAINER_EXITED})
	eventually(t, wait, "ContainerDied of u5", func() bool {
		return rec.hasEvent(messages.PodLifecycleEvent{PodUID: "u5", Type: messages.ContainerDied, ContainerID: "c5"})
	})
	if stamped := stampOf("u5"); !stamped.Equal(madeU5) || lister.statusCallsOf("u5") != 0 {
		t.Fatalf("u5's snapshot stamped %s (made at %s), %d reads; want its making and no read", stampOf("u5"), madeU5, lister.statusCallsOf("u5"))
	}

	// A snapshot older than what the cache holds (a pod sync's own read)
	// does not replace it.
	cfg.Cache.Observed("u1", &cri.PodStatus{ID: "u1", SandboxStatuses: []*runtimeapi.PodSandboxStatus{containerEvent("u1", "", 0).PodSandboxStatus},
		ContainerStatuses: []*cri.ContainerStatus{{ID: "c1", State: cri.ContainerStateExited}}}, made.Add(2*time.Second))
	stream.events <- withContainers(containerEvent("u1", "c1", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT), made.Add(time.Second), map[string]runtimeapi.ContainerState{"c1": running})
	stream.events <- withContainers(containerEvent("u9", "c9", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT), made.Add(time.Second), nil)
	eventually(t, wait, "the next event handled", func() bool {
		return rec.hasEvent(messages.PodLifecycleEvent{PodUID: "u9", Type: messages.ContainerStarted, ContainerID: "c9"})
	})
	if got := cached("c1"); got != cri.ContainerStateExited {
		t.Fatalf("cached c1 %q: an older snapshot replaced a newer status", got)
	}

	// An event that lacks a container the cache holds is read.
	stream.events <- withContainers(containerEvent("u1", "c2", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT), made.Add(3*time.Second), map[string]runtimeapi.ContainerState{"c2": running})
	eventually(t, wait, "u1 read for an event lacking c1", func() bool { return lister.statusCallsOf("u1") == 1 })

	// A container's removal: its snapshot, made after it, lacks that
	// container only, and is taken.
	cfg.Cache.Observed("u1", &cri.PodStatus{ID: "u1", SandboxStatuses: []*runtimeapi.PodSandboxStatus{containerEvent("u1", "", 0).PodSandboxStatus},
		ContainerStatuses: []*cri.ContainerStatus{{ID: "c1", State: cri.ContainerStateExited}, {ID: "c2", State: cri.ContainerStateRunning}}}, made.Add(4*time.Second))
	stream.events <- withContainers(containerEvent("u1", "c1", runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT), made.Add(5*time.Second), map[string]runtimeapi.ContainerState{"c2": running})
	eventually(t, wait, "ContainerRemoved", func() bool {
		return rec.hasEvent(messages.PodLifecycleEvent{PodUID: "u1", Type: messages.ContainerRemoved, ContainerID: "c1"})
	})
	if got, calls := cached("c1"), lister.statusCallsOf("u1"); got != "absent" || cached("c2") != cri.ContainerStateRunning || calls != 1 {
		t.Fatalf("after c1's removal: cached c1 %q, c2 %q, %d reads; want c1 absent, c2 running, no new read", got, cached("c2"), calls)
	}
	// The sandbox's removal is read, and so is an event a client assembled.
	stream.events <- withContainers(containerEvent("u1", "sb-u1", runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT), made.Add(6*time.Second), nil)
	eventually(t, wait, "u1 read for its sandbox's removal", func() bool { return lister.statusCallsOf("u1") == 2 })
	assembled := containerEvent("u1", "c2", runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
	assembled.CreatedAt = 0
	stream.events <- assembled
	eventually(t, wait, "u1 read for an assembled event", func() bool { return lister.statusCallsOf("u1") == 3 })
}
