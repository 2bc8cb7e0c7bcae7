package eviction

import (
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// tracker is the eviction manager's memory between rounds (the kubelet's
// managerImpl fields): when each threshold was first met, when each
// condition was last observed, the thresholds met last round (held until
// their minimum reclaim is reached).
type tracker struct {
	thresholds       []Threshold
	transition       time.Duration
	firstObservedAt  map[thresholdKey]time.Time
	condLastObserved map[v1.NodeConditionType]time.Time
	met              []Threshold
}

type thresholdKey struct {
	signal Signal
	soft   bool
}

func keyOf(t Threshold) thresholdKey { return thresholdKey{t.Signal, t.Soft} }

func newTracker(thresholds []Threshold, transition time.Duration) *tracker {
	return &tracker{thresholds: thresholds, transition: transition,
		firstObservedAt: map[thresholdKey]time.Time{}, condLastObserved: map[v1.NodeConditionType]time.Time{}}
}

// round is one round's outcome.
type round struct {
	// conditions are the pressure conditions to report (held for the
	// transition period after the last threshold that set them).
	conditions []v1.NodeConditionType
	// act are the thresholds met for long enough to evict, the first to
	// relieve first.
	act []Threshold
}

// update runs one round at now on obs (the kubelet's synchronize, before
// the ranking).
func (t *tracker) update(now time.Time, obs map[Signal]observation) round {
	met := thresholdsMet(t.thresholds, obs, false)
	if len(t.met) > 0 {
		// Thresholds met before stay met until the minimum reclaim above
		// them is available.
		met = merge(met, thresholdsMet(t.met, obs, true))
	}
	first := map[thresholdKey]time.Time{}
	for _, th := range met {
		k := keyOf(th)
		if at, ok := t.firstObservedAt[k]; ok {
			first[k] = at
		} else {
			first[k] = now
		}
	}
	t.firstObservedAt = first
	for _, th := range met {
		t.condLastObserved[signalCondition[th.Signal]] = now
	}
	var r round
	for c, at := range t.condLastObserved {
		if now.Sub(at) < t.transition || at.Equal(now) {
			r.conditions = append(r.conditions, c)
		} else {
			delete(t.condLastObserved, c)
		}
	}
	sort.Slice(r.conditions, func(i, j int) bool { return r.conditions[i] < r.conditions[j] })
	for _, th := range met {
		if now.Sub(first[keyOf(th)]) >= th.GracePeriod {
			r.act = append(r.act, th)
		}
	}
	t.met = r.act
	sort.SliceStable(r.act, func(i, j int) bool {
		return r.act[i].Signal == SignalMemoryAvailable && r.act[j].Signal != SignalMemoryAvailable
	})
	return r
}

// thresholdsMet are the thresholds whose signal's available amount is
// below the threshold (plus its minimum reclaim when enforced).
func thresholdsMet(ths []Threshold, obs map[Signal]observation, enforceMinReclaim bool) []Threshold {
	var out []Threshold
	for _, th := range ths {
		o, ok := obs[th.Signal]
		if !ok {
			continue
		}
		quantity := th.Value.amount(o.capacity).DeepCopy()
		if enforceMinReclaim && th.MinReclaim != nil {
			quantity.Add(*th.MinReclaim.amount(o.capacity))
		}
		if quantity.Cmp(*o.available) > 0 {
			out = append(out, th)
		}
	}
	return out
}

func merge(a, b []Threshold) []Threshold {
	out := append([]Threshold(nil), a...)
	for _, th := range b {
		dup := false
		for _, have := range out {
			if keyOf(have) == keyOf(th) {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, th)
		}
	}
	return out
}

// thresholdAmount is the threshold's quantity on this observation.
func thresholdAmount(th Threshold, obs map[Signal]observation) (threshold, available *resource.Quantity) {
	o := obs[th.Signal]
	if o.capacity == nil {
		return th.Value.amount(resource.NewQuantity(0, resource.BinarySI)), resource.NewQuantity(0, resource.BinarySI)
	}
	return th.Value.amount(o.capacity), o.available
}
