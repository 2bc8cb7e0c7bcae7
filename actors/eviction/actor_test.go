package eviction

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/actorlet/actorlet/actors/actorutil/actortest"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/test/testutil"
)

// The actor under a parent standing in for the supervisor: one pod
// evicted per round, the best-effort hog first, with the kubelet's status;
// the condition reported at once and held for the transition period.
func TestActorEvictsOnePodPerRoundAndHoldsTheCondition(t *testing.T) {
	var mu sync.Mutex
	avail := uint64(50)
	hog, guaranteed := pod("hog", 0, ""), pod("guaranteed", 0, "400Mi")
	read := func(context.Context) (Stats, error) {
		mu.Lock()
		defer mu.Unlock()
		pods := map[types.UID]PodStats{}
		memUse(pods, "hog", 200*mi)
		memUse(pods, "guaranteed", 100*mi)
		return Stats{MemoryCapacity: 1000 * mi, MemoryWorkingSet: (1000 - avail) * mi, Pods: pods}, nil
	}
	p := startUnder(t, Config{Thresholds: mustParse(t, Flags{Hard: "memory.available<100Mi"}), Stats: read,
		PressureTransitionPeriod: time.Minute}, hog, guaranteed)
	pressure, kills, next := p.pressure, p.kills, p.next
	if got := <-pressure; !slices.Equal(got, []v1.NodeConditionType{v1.NodeMemoryPressure}) {
		t.Fatalf("pressure = %v", got)
	}
	k := <-kills
	if k.UID != hog.UID {
		t.Fatalf("evicted %s, want the best-effort hog", k.UID)
	}
	wantMsg := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container c was using 200Mi, request is 0, has larger consumption of memory. "
	o := k.Options
	if !o.Evict || o.Reason != "Evicted" || o.Message != wantMsg || o.GracePeriodSecondsOverride == nil || *o.GracePeriodSecondsOverride != 1 {
		t.Fatalf("kill options = %+v", o)
	}
	if len(o.Conditions) != 1 || o.Conditions[0].Type != v1.DisruptionTarget || o.Conditions[0].Reason != v1.PodReasonTerminationByKubelet || o.Conditions[0].Message != wantMsg {
		t.Fatalf("conditions = %+v", o.Conditions)
	}
	// The hog is gone and memory is back: no further eviction, the
	// condition held until the transition period is over.
	p.setActive(guaranteed)
	mu.Lock()
	avail = 500
	mu.Unlock()
	next()
	next() // the previous round's decision is done once the next one asks
	select {
	case k := <-kills:
		t.Fatalf("evicted %s after the pressure went", k.UID)
	case p := <-pressure:
		t.Fatalf("pressure changed to %v within the transition period", p)
	default:
	}
	for range 6 {
		next()
	}
	if got := <-pressure; len(got) != 0 {
		t.Fatalf("pressure after the transition period = %v, want none", got)
	}
}

// While the pod evicted last is still active no other pod is evicted (its
// memory is not free yet); once it is gone, the next one is.
func TestActorWaitsForTheEvictedPodToGo(t *testing.T) {
	hog, other := pod("hog", 0, ""), pod("other", 0, "")
	read := func(context.Context) (Stats, error) {
		pods := map[types.UID]PodStats{}
		memUse(pods, "hog", 200*mi)
		memUse(pods, "other", 100*mi)
		return Stats{MemoryCapacity: 1000 * mi, MemoryWorkingSet: 950 * mi, Pods: pods}, nil
	}
	p := startUnder(t, Config{Thresholds: mustParse(t, Flags{Hard: "memory.available<100Mi"}), Stats: read,
		PressureTransitionPeriod: time.Minute}, hog, other)
	kills, next := p.kills, p.next
	if k := <-kills; k.UID != hog.UID {
		t.Fatalf("evicted %s first, want the hog", k.UID)
	}
	next()
	next() // the second round's decision is done once the third asks
	select {
	case k := <-kills:
		t.Fatalf("evicted %s while the hog was still going", k.UID)
	default:
	}
	p.setActive(other)
	next()
	if k := <-kills; k.UID != other.UID {
		t.Fatalf("evicted %s once the hog was gone, want the other pod", k.UID)
	}
}

// parent stands in for the supervisor: it answers GetNodeConditions with
// the active pods and keeps what the actor tells it.
type parent struct {
	t        *testing.T
	clk      *clocktesting.FakeClock
	mu       sync.Mutex
	active   []*v1.Pod
	done     []types.UID // the terminated pods it reports
	rounds   chan struct{}
	pressure chan []v1.NodeConditionType
	kills    chan *messages.TerminatePod
}

func startUnder(t *testing.T, cfg Config, active ...*v1.Pod) *parent {
	cfg.NoMemoryNotifications = true
	return startUnderWith(t, cfg, nil, active...)
}

// startUnderWith is startUnder with the terminated pods the parent names,
// and memory notifications as cfg says.
func startUnderWith(t *testing.T, cfg Config, terminated []types.UID, active ...*v1.Pod) *parent {
	p := &parent{t: t, clk: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), active: active, done: terminated,
		rounds: make(chan struct{}, 16), pressure: make(chan []v1.NodeConditionType, 16), kills: make(chan *messages.TerminatePod, 16)}
	cfg.Clock, cfg.MonitoringInterval = p.clk, 10*time.Second
	props, err := Props(cfg)
	if err != nil {
		t.Fatal(err)
	}
	actortest.SpawnChild(t, actortest.System(t), props, func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case *messages.GetNodeConditions:
			p.mu.Lock()
			ctx.Respond(&messages.NodeConditions{Pods: slices.Clone(p.active), Terminated: slices.Clone(p.done)})
			p.mu.Unlock()
			p.rounds <- struct{}{}
		case *messages.NodePressureChanged:
			p.pressure <- m.Conditions
		case *messages.TerminatePod:
			p.kills <- m
		}
	})
	<-p.rounds // the first round runs at start
	return p
}

func (p *parent) setActive(pods ...*v1.Pod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.active = pods
}

// next runs the next round; the previous round's decision is done once
// it returns.
func (p *parent) next() {
	p.t.Helper()
	for !p.clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	p.clk.Step(10 * time.Second)
	<-p.rounds
}

// A disk threshold met: node-level resources are reclaimed first (with
// the terminated pods the supervisor names), the stats read again, and no
// pod evicted when that relieved the pressure; when it did not, the pod
// using the most disk is evicted with the kubelet's message.
func TestActorReclaimsBeforeEvicting(t *testing.T) {
	var mu sync.Mutex
	avail := uint64(5) // of 100 MiB, threshold 10%
	freed := uint64(0) // what a reclaim frees
	var reclaims [][]types.UID
	read := func(context.Context) (Stats, error) {
		mu.Lock()
		defer mu.Unlock()
		return Stats{NodeFs: FsStats{Capacity: 100 * mi, Available: avail * mi}, Pods: map[types.UID]PodStats{
			"writer": {Containers: []ContainerStats{{Name: "c", Rootfs: 40 * mi, Logs: 10 * mi}}},
			"quiet":  {Containers: []ContainerStats{{Name: "c", Rootfs: mi}}},
		}}, nil
	}
	reclaim := func(_ context.Context, terminated []types.UID) (Reclaimed, error) {
		mu.Lock()
		defer mu.Unlock()
		reclaims = append(reclaims, terminated)
		avail += freed
		return Reclaimed{Pods: len(terminated), Containers: len(terminated), Sandboxes: len(terminated)}, nil
	}
	rec := &testutil.Recorder{}
	writer, quiet := pod("writer", 0, ""), pod("quiet", 0, "")
	mu.Lock()
	freed = 50
	mu.Unlock()
	p := startUnderWith(t, Config{Thresholds: mustParse(t, Flags{Hard: "nodefs.available<10%"}), Stats: read, Reclaim: reclaim,
		Recorder: rec, PressureTransitionPeriod: time.Minute}, []types.UID{"finished"}, writer, quiet)
	if got := <-p.pressure; !slices.Equal(got, []v1.NodeConditionType{v1.NodeDiskPressure}) {
		t.Fatalf("pressure = %v", got)
	}
	p.next() // the first round's reclaim and reading are done once the next round asks
	select {
	case k := <-p.kills:
		t.Fatalf("evicted %s though the reclaim freed enough", k.UID)
	default:
	}
	mu.Lock()
	if len(reclaims) != 1 || !slices.Equal(reclaims[0], []types.UID{"finished"}) {
		t.Errorf("reclaims = %v, want one with the terminated pod", reclaims)
	}
	// Now the disk fills again and a reclaim frees nothing.
	avail, freed = 5, 0
	mu.Unlock()
	p.next()
	k := <-p.kills
	if k.UID != writer.UID {
		t.Fatalf("evicted %s, want the pod using the most disk", k.UID)
	}
	want := "The node was low on resource: ephemeral-storage. Threshold quantity: 10Mi, available: 5Mi. Container c was using 50Mi, request is 0, has larger consumption of ephemeral-storage. "
	if k.Options.Message != want || *k.Options.GracePeriodSecondsOverride != 1 {
		t.Fatalf("kill options %+v, want message %q", k.Options, want)
	}
	for _, want := range []string{
		"Warning EvictionThresholdMet Attempting to reclaim ephemeral-storage",
		"Normal NodeResourcesReclaimed Eviction manager: removed 1 dead containers and 1 sandboxes of 1 terminated pods, and 0 unused images (0)",
		"Warning Evicted " + want,
	} {
		if !slices.Contains(rec.Lines(), want) {
			t.Errorf("no event %q in %q", want, rec.Lines())
		}
	}
}

// Every round, each pod over one of its local-storage limits is evicted
// at once (grace 1 s, no DisruptionTarget, as the kubelet's); one under
// its limits is not. No threshold needs to be set.
func TestActorLocalStorageEviction(t *testing.T) {
	over := withEmptyDir(pod("over", 0, ""), "scratch", "", "1Mi")
	under := withEmptyDir(pod("under", 0, ""), "scratch", "", "10Mi")
	read := func(context.Context) (Stats, error) {
		return Stats{Pods: map[types.UID]PodStats{
			"over":  {Volumes: map[string]uint64{"scratch": 2 * mi}},
			"under": {Volumes: map[string]uint64{"scratch": 2 * mi}},
		}}, nil
	}
	p := startUnder(t, Config{Stats: read, LocalStorageCapacityIsolation: true}, over, under)
	k := <-p.kills
	if k.UID != over.UID || k.Options.Message != `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". ` ||
		k.Options.Reason != "Evicted" || !k.Options.Evict || *k.Options.GracePeriodSecondsOverride != 1 || len(k.Options.Conditions) != 0 {
		t.Fatalf("kill %s %+v", k.UID, k.Options)
	}
	p.next()
	p.next()
	select {
	case k := <-p.kills:
		t.Fatalf("evicted %s again or the pod under its limit", k.UID)
	default:
	}
}
