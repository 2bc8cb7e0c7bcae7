package pleg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critesting "k8s.io/cri-api/pkg/apis/testing"

	"github.com/actorlet/actorlet/actors/actorutil/actortest"
	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/test/testutil"
)

// eventually polls cond until it holds or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testutil.Until(t, timeout, what, cond)
}

// podLister adapts the upstream fake CRI runtime to the Runtime interface,
// grouping sandboxes and containers by their pod UID label, the way the
// runtime manager does.
type podLister struct {
	fake *critesting.FakeRuntimeService

	mu           sync.Mutex
	getPodsErr   error
	statusErrs   map[types.UID]int // fail the next n GetPodStatus calls
	getPodsCalls int
	statusCalls  map[types.UID]int // GetPodStatus calls per pod
	// held: GetPodStatus of these pods waits until the channel closes.
	held map[types.UID]chan struct{}
}

var _ Runtime = &podLister{}

func newPodLister(fake *critesting.FakeRuntimeService) *podLister {
	return &podLister{fake: fake, statusErrs: make(map[types.UID]int), statusCalls: make(map[types.UID]int), held: map[types.UID]chan struct{}{}}
}

// hold makes GetPodStatus of pod uid wait until release is called.
func (l *podLister) hold(uid types.UID) (release func()) {
	ch := make(chan struct{})
	l.mu.Lock()
	l.held[uid] = ch
	l.mu.Unlock()
	return func() { close(ch) }
}

// statusCallsOf is how many times pod uid was inspected.
func (l *podLister) statusCallsOf(uid types.UID) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.statusCalls[uid]
}

func (l *podLister) setGetPodsErr(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.getPodsErr = err
}

func (l *podLister) failStatus(uid types.UID, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.statusErrs[uid] = n
}

func (l *podLister) calls() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.getPodsCalls
}

func sandboxState(s runtimeapi.PodSandboxState) cri.ContainerState {
	if s == runtimeapi.PodSandboxState_SANDBOX_READY {
		return cri.ContainerStateRunning
	}
	return cri.ContainerStateExited
}

func (l *podLister) GetPods(ctx context.Context, all bool) ([]*cri.Pod, error) {
	l.mu.Lock()
	l.getPodsCalls++
	err := l.getPodsErr
	l.mu.Unlock()
	if err != nil {
		return nil, err
	}
	sandboxes, err := l.fake.ListPodSandbox(ctx, nil)
	if err != nil {
		return nil, err
	}
	containers, err := l.fake.ListContainers(ctx, nil)
	if err != nil {
		return nil, err
	}
	pods := map[types.UID]*cri.Pod{}
	get := func(labels map[string]string) *cri.Pod {
		uid := types.UID(labels[cri.LabelPodUID])
		p, ok := pods[uid]
		if !ok {
			p = &cri.Pod{ID: uid, Name: labels[cri.LabelPodName], Namespace: labels[cri.LabelPodNamespace]}
			pods[uid] = p
		}
		return p
	}
	for _, s := range sandboxes {
		p := get(s.Labels)
		p.Sandboxes = append(p.Sandboxes, &cri.Container{ID: s.Id, State: sandboxState(s.State), CreatedAt: s.CreatedAt})
	}
	for _, c := range containers {
		p := get(c.Labels)
		p.Containers = append(p.Containers, &cri.Container{ID: c.Id, Name: c.Metadata.GetName(), State: cri.ContainerStateOf(c.State), CreatedAt: c.CreatedAt})
	}
	out := make([]*cri.Pod, 0, len(pods))
	for _, p := range pods {
		out = append(out, p)
	}
	return out, nil
}

func (l *podLister) GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*cri.PodStatus, error) {
	l.mu.Lock()
	l.statusCalls[uid]++
	if held := l.held[uid]; held != nil {
		l.mu.Unlock()
		select {
		case <-held:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		l.mu.Lock()
	}
	if n := l.statusErrs[uid]; n > 0 {
		l.statusErrs[uid] = n - 1
		l.mu.Unlock()
		return nil, errors.New("injected status failure")
	}
	l.mu.Unlock()
	status := &cri.PodStatus{ID: uid, Name: name, Namespace: namespace}
	containers, err := l.fake.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{cri.LabelPodUID: string(uid)}})
	if err != nil {
		return nil, err
	}
	for _, c := range containers {
		resp, err := l.fake.ContainerStatus(ctx, c.Id, false)
		if err != nil {
			return nil, fmt.Errorf("container %q: %w", c.Id, err)
		}
		s := resp.Status
		status.ContainerStatuses = append(status.ContainerStatuses, &cri.ContainerStatus{
			ID: s.Id, Name: s.Metadata.GetName(), State: cri.ContainerStateOf(s.State), ExitCode: int(s.ExitCode),
		})
	}
	return status, nil
}

// fakeContainer is a container of pod uid in sandbox "sb-<uid>".
func fakeContainer(uid, id string, state runtimeapi.ContainerState) *critesting.FakeContainer {
	return &critesting.FakeContainer{
		SandboxID: "sb-" + uid,
		ContainerStatus: runtimeapi.ContainerStatus{
			Id:       id,
			Metadata: &runtimeapi.ContainerMetadata{Name: "c-" + id},
			State:    state,
			Labels:   map[string]string{cri.LabelPodUID: uid, cri.LabelPodName: "pod-" + uid, cri.LabelPodNamespace: "default"},
		},
	}
}

func fakeSandbox(uid string, state runtimeapi.PodSandboxState) *critesting.FakePodSandbox {
	return &critesting.FakePodSandbox{PodSandboxStatus: runtimeapi.PodSandboxStatus{
		Id:       "sb-" + uid,
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "pod-" + uid, Namespace: "default", Uid: uid},
		State:    state,
		Labels:   map[string]string{cri.LabelPodUID: uid, cri.LabelPodName: "pod-" + uid, cri.LabelPodNamespace: "default"},
	}}
}

// recorder is the parent of the PLEG under test: it keeps every fact the
// PLEG sends, as the supervisor would receive them.
type recorder struct {
	actortest.Inbox
	mu sync.Mutex
	// onEvent, when set, runs as each lifecycle event arrives.
	onEvent func(messages.PodLifecycleEvent)
}

func (r *recorder) events() []messages.PodLifecycleEvent {
	return actortest.Of[messages.PodLifecycleEvent](&r.Inbox)
}

func (r *recorder) health() []messages.RelistHealthChanged {
	return actortest.Of[messages.RelistHealthChanged](&r.Inbox)
}

func (r *recorder) runtimeHealth() []messages.RuntimeHealthChanged {
	return actortest.Of[messages.RuntimeHealthChanged](&r.Inbox)
}

func (r *recorder) hasEvent(want messages.PodLifecycleEvent) bool {
	for _, e := range r.events() {
		if e == want {
			return true
		}
	}
	return false
}

// spawnPLEG starts a parent recorder with a PLEG child built from cfg; the
// actor system shuts down at the end of the test.
func spawnPLEG(t *testing.T, cfg Config) *recorder {
	t.Helper()
	return spawnRecorder(t, cfg, &recorder{})
}

// spawnRecorder is spawnPLEG with a prepared recorder.
func spawnRecorder(t *testing.T, cfg Config, rec *recorder) *recorder {
	t.Helper()
	props, err := Props(cfg)
	if err != nil {
		t.Fatal(err)
	}
	actortest.SpawnChild(t, actortest.System(t), props, func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case *messages.PodLifecycleEvent:
			rec.mu.Lock()
			onEvent := rec.onEvent
			rec.mu.Unlock()
			if onEvent != nil {
				onEvent(*m)
			}
			rec.Add(*m)
		case *messages.RelistHealthChanged:
			rec.Add(*m)
		case *messages.RuntimeHealthChanged:
			rec.Add(*m)
		}
	})
	return rec
}

// observeEvents sets cfg's EventObserver and returns a check, for the end
// of a test, that the observer saw every event the parent got, in order,
// each before the parent did.
func observeEvents(t *testing.T, cfg *Config, rec func() []messages.PodLifecycleEvent) (check func()) {
	var mu sync.Mutex
	var seen []messages.PodLifecycleEvent
	cfg.EventObserver = func(ev messages.PodLifecycleEvent) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, ev)
	}
	return func() {
		t.Helper()
		got := rec() // first: the observer's list is then at least as long
		mu.Lock()
		defer mu.Unlock()
		if len(got) == 0 || len(seen) < len(got) || !slices.Equal(seen[:len(got)], got) {
			t.Fatalf("the event observer saw %v, the parent got %v", seen, got)
		}
	}
}
