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
	rounds   chan struct{}
	pressure chan []v1.NodeConditionType
	kills    chan *messages.TerminatePod
}

func startUnder(t *testing.T, cfg Config, active ...*v1.Pod) *parent {
	p := &parent{t: t, clk: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), active: active,
		rounds: make(chan struct{}, 16), pressure: make(chan []v1.NodeConditionType, 16), kills: make(chan *messages.TerminatePod, 16)}
	cfg.Clock, cfg.MonitoringInterval, cfg.NoMemoryNotifications = p.clk, 10*time.Second, true
	props, err := Props(cfg)
	if err != nil {
		t.Fatal(err)
	}
	actortest.SpawnChild(t, actortest.System(t), props, func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case *messages.GetNodeConditions:
			p.mu.Lock()
			ctx.Respond(&messages.NodeConditions{Pods: slices.Clone(p.active)})
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
