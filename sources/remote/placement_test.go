package remote

import (
	"github.com/actorlet/actorlet/messages/wire"
	"math"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/seconds"
)

func affinity(reqs ...v1.NodeSelectorRequirement) *v1.Affinity {
	return &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
		NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: reqs}}}}}
}

// Required node affinity with every operator, and taints/tolerations, as
// the scheduler decides them.
func TestFits(t *testing.T) {
	n := newNodeView("n1", map[string]string{"zone": "a", "gpus": "4", "ssd": ""}, []v1.Taint{{Key: "dedicated", Value: "ml", Effect: v1.TaintEffectNoSchedule}, {Key: "soft", Effect: v1.TaintEffectPreferNoSchedule}})
	tolerate := []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "ml", Effect: v1.TaintEffectNoSchedule}}
	req := func(key string, op v1.NodeSelectorOperator, values ...string) v1.NodeSelectorRequirement {
		return v1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
	}
	for _, tc := range []struct {
		name string
		aff  *v1.Affinity
		sel  map[string]string
		tol  []v1.Toleration
		want bool
	}{
		{"In", affinity(req("zone", v1.NodeSelectorOpIn, "a", "b")), nil, tolerate, true},
		{"In misses", affinity(req("zone", v1.NodeSelectorOpIn, "b")), nil, tolerate, false},
		{"NotIn", affinity(req("zone", v1.NodeSelectorOpNotIn, "b")), nil, tolerate, true},
		{"NotIn misses", affinity(req("zone", v1.NodeSelectorOpNotIn, "a")), nil, tolerate, false},
		{"Exists", affinity(req("ssd", v1.NodeSelectorOpExists)), nil, tolerate, true},
		{"DoesNotExist", affinity(req("ssd", v1.NodeSelectorOpDoesNotExist)), nil, tolerate, false},
		{"Gt", affinity(req("gpus", v1.NodeSelectorOpGt, "2")), nil, tolerate, true},
		{"Lt", affinity(req("gpus", v1.NodeSelectorOpLt, "2")), nil, tolerate, false},
		{"matchFields metadata.name", &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
			NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{req("metadata.name", v1.NodeSelectorOpIn, "n1")}}}}}}, nil, tolerate, true},
		{"terms are ORed", &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
			NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{req("zone", v1.NodeSelectorOpIn, "z")}},
				{MatchExpressions: []v1.NodeSelectorRequirement{req("zone", v1.NodeSelectorOpIn, "a")}}}}}}, nil, tolerate, true},
		{"nodeSelector and affinity both apply", affinity(req("zone", v1.NodeSelectorOpIn, "a")), map[string]string{"zone": "b"}, tolerate, false},
		{"untolerated NoSchedule taint", nil, nil, nil, false},
		{"tolerated by Exists", nil, nil, []v1.Toleration{{Operator: v1.TolerationOpExists}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{Affinity: tc.aff, NodeSelector: tc.sel, Tolerations: tc.tol}}
			if got, why := n.fits(pod); got != tc.want {
				t.Errorf("fits = %v (%s), want %v", got, why, tc.want)
			}
		})
	}
}

func TestEvictAfter(t *testing.T) {
	n := newNodeView("n1", nil, []v1.Taint{{Key: "maint", Effect: v1.TaintEffectNoExecute}})
	secs := func(s int64) *int64 { return &s }
	for _, tc := range []struct {
		name  string
		tol   []v1.Toleration
		evict bool
		after time.Duration
	}{
		{"untolerated: at once", nil, true, 0},
		{"tolerated forever", []v1.Toleration{{Key: "maint", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}, false, 0},
		{"tolerated for 30 s", []v1.Toleration{{Key: "maint", Operator: v1.TolerationOpExists, TolerationSeconds: secs(30)}}, true, 30 * time.Second},
		// Hostile values: no overflow into a negative or tiny duration that
		// would evict at once.
		{"tolerated for 18446744074 s", []v1.Toleration{{Key: "maint", Operator: v1.TolerationOpExists, TolerationSeconds: secs(18446744074)}}, true, seconds.Max},
		{"tolerated for MaxInt64 s", []v1.Toleration{{Key: "maint", Operator: v1.TolerationOpExists, TolerationSeconds: secs(math.MaxInt64)}}, true, seconds.Max},
		{"negative tolerationSeconds: at once", []v1.Toleration{{Key: "maint", Operator: v1.TolerationOpExists, TolerationSeconds: secs(-5)}}, true, 0},
	} {
		after, evict := n.evictAfter(&v1.Pod{Spec: v1.PodSpec{Tolerations: tc.tol}})
		if evict != tc.evict || (evict && after != tc.after) {
			t.Errorf("%s: evict=%v after=%s, want %v %s", tc.name, evict, after, tc.evict, tc.after)
		}
	}
}

// A fleet pod follows the node's labels and taints as they change at run
// time: it waits while the affinity misses, starts once the labels match,
// keeps running when they stop matching (IgnoredDuringExecution), is
// evicted by an untolerated NoExecute taint and comes back when it goes.
func TestSourceFollowsNodeLabelsAndTaints(t *testing.T) {
	e := newEnv(t)
	s, c := e.start(t, "n1", map[string]string{"zone": "b"})
	c.waitUpdates(t, 1) // the initial SET
	key := wire.DesiredFleetKey("default", "web")
	e.put(t, key, podJSON(t, "default", "web", "nginx", func(p *v1.Pod) {
		p.Spec.Affinity = affinity(v1.NodeSelectorRequirement{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{"a"}})
	}))
	c.never(t, 1)

	s.SetNode(map[string]string{"zone": "a"}, nil)
	if u := c.waitUpdates(t, 2)[1]; u.Op != messages.OpAdd || u.Pods[0].Name != "web" {
		t.Fatalf("update = %v, want ADD web", u)
	}
	s.SetNode(map[string]string{"zone": "b"}, nil)
	c.never(t, 2) // labels no longer match: it keeps running

	s.SetNode(map[string]string{"zone": "b"}, []v1.Taint{{Key: "maint", Effect: v1.TaintEffectNoExecute}})
	if u := c.waitUpdates(t, 3)[2]; u.Op != messages.OpRemove {
		t.Fatalf("update = %v, want REMOVE (NoExecute)", u)
	}
	s.SetNode(map[string]string{"zone": "a"}, nil)
	if u := c.waitUpdates(t, 4)[3]; u.Op != messages.OpAdd {
		t.Fatalf("update = %v, want ADD once the taint is gone", u)
	}
	c.mu.Lock()
	evicted := len(c.events) > 0
	c.mu.Unlock()
	if !evicted {
		t.Error("no TaintManagerEviction event")
	}
}

// never checks that the collector stays at n updates for a while.
func (c *collector) never(t *testing.T, n int) {
	t.Helper()
	time.Sleep(300 * time.Millisecond)
	if got := c.snapshot(); len(got) != n {
		t.Fatalf("got %d updates %v, want %d", len(got), got, n)
	}
}
