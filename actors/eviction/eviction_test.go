package eviction

import (
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const mi = 1 << 20

func TestParseThresholdsDefault(t *testing.T) {
	ths, err := ParseThresholds(Flags{Hard: DefaultEvictionHard})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, th := range ths {
		got = append(got, string(th.Signal)+"<"+th.Value.String())
	}
	want := []string{"imagefs.available<15%", "memory.available<100Mi", "nodefs.available<10%", "nodefs.inodesFree<5%"}
	if !slices.Equal(got, want) {
		t.Fatalf("thresholds = %v, want %v", got, want)
	}
}

func TestParseThresholdsSoftAndReclaim(t *testing.T) {
	ths, err := ParseThresholds(Flags{Hard: "memory.available<1Gi,pid.available<0", Soft: "memory.available<2Gi",
		SoftGracePeriod: "memory.available=1m30s", MinimumReclaim: "memory.available=500Mi"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ths) != 2 {
		t.Fatalf("got %d thresholds (pid.available<0 disables), want 2: %+v", len(ths), ths)
	}
	soft := ths[1]
	if !soft.Soft || soft.GracePeriod != 90*time.Second || soft.Value.String() != "2Gi" || soft.MinReclaim.String() != "500Mi" {
		t.Errorf("soft threshold = %+v", soft)
	}
}

func TestParseThresholdsHostile(t *testing.T) {
	for _, tt := range []struct {
		f    Flags
		want string
	}{
		{Flags{Hard: "memory.available>1Gi"}, "--eviction-hard: \"memory.available>1Gi\": want <signal><<value>"},
		{Flags{Hard: "memory.free<1Gi"}, "--eviction-hard: unsupported eviction signal \"memory.free\""},
		{Flags{Hard: "memory.available<-1Gi"}, "--eviction-hard: memory.available: eviction threshold must be positive"},
		{Flags{Hard: "nodefs.available<101%"}, "must be <= 100%"},
		{Flags{Hard: "nodefs.available<-1%"}, "must be >= 0%"},
		{Flags{Hard: "nodefs.available<lots"}, "--eviction-hard: nodefs.available: \"lots\" is not a quantity"},
		{Flags{Hard: "memory.available<1Gi,memory.available<2Gi"}, "given twice"},
		{Flags{Soft: "memory.available<1Gi"}, "--eviction-soft: memory.available: a soft threshold needs a grace period"},
		{Flags{Soft: "memory.available<1Gi", SoftGracePeriod: "memory.available=soon"}, "--eviction-soft-grace-period: memory.available=\"soon\""},
		{Flags{SoftGracePeriod: "memory.available=1m"}, "no --eviction-soft threshold"},
		{Flags{MinimumReclaim: "memory.available=x"}, "--eviction-minimum-reclaim: memory.available"},
		{Flags{Hard: strings.Repeat("memory.available<1Gi,", 300)}, "--eviction-hard: 6300 bytes, the limit is 4096"},
		{Flags{Hard: strings.Repeat("a<1,", 40)}, "--eviction-hard: 41 entries, the limit is 32"},
	} {
		_, err := ParseThresholds(tt.f)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseThresholds(%+v) = %v, want an error with %q", tt.f, err, tt.want)
		}
	}
}

func TestObserve(t *testing.T) {
	obs := observe(Stats{MemoryCapacity: 1000 * mi, MemoryWorkingSet: 900 * mi,
		NodeFs: FsStats{Capacity: 100, Available: 5, Inodes: 1000, InodesFree: 10},
		PIDMax: 100, PIDs: 120})
	check := func(sig Signal, avail, capacity int64) {
		t.Helper()
		o, ok := obs[sig]
		if !ok {
			t.Fatalf("%s not observed", sig)
		}
		if o.available.Value() != avail || o.capacity.Value() != capacity {
			t.Errorf("%s = %s of %s, want %d of %d", sig, o.available, o.capacity, avail, capacity)
		}
	}
	check(SignalMemoryAvailable, 100*mi, 1000*mi)
	check(SignalNodeFsAvailable, 5, 100)
	check(SignalNodeFsInodesFree, 10, 1000)
	if _, ok := observe(Stats{ImageFs: FsStats{Capacity: 10, Available: 1, Inodes: 100, InodesFree: 3}})[SignalImageFsInodesFree]; !ok {
		t.Error("imagefs.inodesFree not observed")
	}
	check(SignalPIDAvailable, 0, 100) // more processes than the limit: none available
	if _, ok := obs[SignalImageFsAvailable]; ok {
		t.Error("imagefs observed without a reading")
	}
}

func mustParse(t *testing.T, f Flags) []Threshold {
	t.Helper()
	ths, err := ParseThresholds(f)
	if err != nil {
		t.Fatal(err)
	}
	return ths
}

func memStats(availMi uint64) map[Signal]observation {
	return observe(Stats{MemoryCapacity: 1000 * mi, MemoryWorkingSet: (1000 - availMi) * mi})
}

// The condition holds for the transition period after the threshold is
// no longer met; the threshold acts only while met.
func TestTrackerTransitionPeriod(t *testing.T) {
	tr := newTracker(mustParse(t, Flags{Hard: "memory.available<100Mi"}), 5*time.Minute)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if r := tr.update(t0, memStats(500)); len(r.conditions) != 0 || len(r.act) != 0 {
		t.Fatalf("no pressure: %+v", r)
	}
	r := tr.update(t0.Add(10*time.Second), memStats(50))
	if !slices.Equal(r.conditions, []v1.NodeConditionType{v1.NodeMemoryPressure}) || len(r.act) != 1 {
		t.Fatalf("under the threshold: %+v", r)
	}
	r = tr.update(t0.Add(20*time.Second), memStats(500))
	if !slices.Equal(r.conditions, []v1.NodeConditionType{v1.NodeMemoryPressure}) || len(r.act) != 0 {
		t.Fatalf("recovered within the transition period: %+v, want the condition held and no eviction", r)
	}
	r = tr.update(t0.Add(10*time.Second+5*time.Minute-time.Nanosecond), memStats(500))
	if len(r.conditions) != 1 {
		t.Fatalf("just before the transition period ends: %+v", r)
	}
	if r = tr.update(t0.Add(10*time.Second+5*time.Minute), memStats(500)); len(r.conditions) != 0 {
		t.Fatalf("after the transition period: %+v, want no condition", r)
	}
}

func TestTrackerSoftGracePeriod(t *testing.T) {
	tr := newTracker(mustParse(t, Flags{Soft: "memory.available<200Mi", SoftGracePeriod: "memory.available=1m"}), time.Minute)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if r := tr.update(t0, memStats(100)); len(r.conditions) != 1 || len(r.act) != 0 {
		t.Fatalf("soft threshold just met: %+v, want the condition and no eviction yet", r)
	}
	if r := tr.update(t0.Add(59*time.Second), memStats(100)); len(r.act) != 0 {
		t.Fatalf("before the grace period: %+v", r)
	}
	if r := tr.update(t0.Add(time.Minute), memStats(100)); len(r.act) != 1 || !r.act[0].Soft {
		t.Fatalf("at the grace period: %+v, want the soft threshold to act", r)
	}
	// Met again after a gap: the grace period starts over.
	tr.update(t0.Add(2*time.Minute), memStats(500))
	if r := tr.update(t0.Add(3*time.Minute), memStats(100)); len(r.act) != 0 {
		t.Fatalf("met again: %+v, want the grace period to start over", r)
	}
}

func TestTrackerMinimumReclaim(t *testing.T) {
	tr := newTracker(mustParse(t, Flags{Hard: "memory.available<100Mi", MinimumReclaim: "memory.available=200Mi"}), time.Minute)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tr.update(t0, memStats(50))
	if r := tr.update(t0.Add(time.Second), memStats(250)); len(r.act) != 1 {
		t.Fatalf("above the threshold, below threshold+minimum reclaim: %+v, want it still met", r)
	}
	if r := tr.update(t0.Add(2*time.Second), memStats(350)); len(r.act) != 0 {
		t.Fatalf("above threshold+minimum reclaim: %+v, want it resolved", r)
	}
}

func TestTrackerDiskAndPID(t *testing.T) {
	tr := newTracker(mustParse(t, Flags{Hard: "nodefs.available<10%,pid.available<10"}), time.Minute)
	r := tr.update(time.Now(), observe(Stats{NodeFs: FsStats{Capacity: 100, Available: 5}, PIDMax: 100, PIDs: 95}))
	if !slices.Equal(r.conditions, []v1.NodeConditionType{v1.NodeDiskPressure, v1.NodePIDPressure}) {
		t.Fatalf("conditions = %v", r.conditions)
	}
}

func pod(name string, prio int32, memReq string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Spec: v1.PodSpec{Priority: &prio, Containers: []v1.Container{{Name: "c"}}}}
	if memReq != "" {
		q := resource.MustParse(memReq)
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceMemory: q}
		p.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceMemory: q}
	}
	return p
}

func memUse(m map[types.UID]PodStats, name string, use uint64) {
	m[types.UID(name)] = PodStats{Containers: []ContainerStats{{Name: "c", MemoryWorkingSet: use}}}
}

func names(pods []*v1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// As rankMemoryPressure: pods above their requests first, then lower
// priority, then the most usage above requests.
func TestRankMemory(t *testing.T) {
	stats := map[types.UID]PodStats{}
	pods := []*v1.Pod{
		pod("guaranteed-under", 0, "500Mi"),
		pod("besteffort-small", 0, ""),
		pod("besteffort-big", 0, ""),
		pod("burstable-over-high-prio", 1000, "10Mi"),
		pod("guaranteed-over", 0, "100Mi"),
		pod("no-stats", 0, "1Gi"),
	}
	memUse(stats, "guaranteed-under", 400*mi)
	memUse(stats, "besteffort-small", 10*mi)
	memUse(stats, "besteffort-big", 300*mi)
	memUse(stats, "burstable-over-high-prio", 900*mi)
	memUse(stats, "guaranteed-over", 150*mi)
	rank(SignalMemoryAvailable, pods, stats, false)
	want := []string{"no-stats", "besteffort-big", "guaranteed-over", "besteffort-small", "burstable-over-high-prio", "guaranteed-under"}
	if got := names(pods); !slices.Equal(got, want) {
		t.Fatalf("rank = %v, want %v", got, want)
	}
}

func TestRankPID(t *testing.T) {
	stats := map[types.UID]PodStats{"a": {Processes: 3}, "b": {Processes: 30}, "c": {Processes: 300}}
	pods := []*v1.Pod{pod("a", 0, ""), pod("b", 0, ""), pod("c", 5, "")}
	rank(SignalPIDAvailable, pods, stats, false)
	if got := names(pods); !slices.Equal(got, []string{"b", "a", "c"}) {
		t.Fatalf("rank = %v", got)
	}
}

func TestEvictionMessage(t *testing.T) {
	ths := mustParse(t, Flags{Hard: "memory.available<100Mi"})
	stats := map[types.UID]PodStats{}
	memUse(stats, "hog", 200*mi)
	got := evictionMessage(ths[0], memStats(50), pod("hog", 0, ""), stats)
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container c was using 200Mi, request is 0, has larger consumption of memory. "
	if got != want {
		t.Fatalf("message =\n%q, want\n%q", got, want)
	}
}

func TestAdmit(t *testing.T) {
	be, guaranteed := pod("be", 0, ""), pod("g", 0, "1Gi")
	mem, disk := []v1.NodeConditionType{v1.NodeMemoryPressure}, []v1.NodeConditionType{v1.NodeDiskPressure}
	if r, _ := Admit(be, nil); r != "" {
		t.Errorf("no pressure refused %s", r)
	}
	if r, _ := Admit(guaranteed, mem); r != "" {
		t.Errorf("memory pressure refused a guaranteed pod: %s", r)
	}
	if r, m := Admit(be, mem); r != "Evicted" || m != "The node had condition: [MemoryPressure]. " {
		t.Errorf("memory pressure, best effort: %q %q", r, m)
	}
	tolerant := be.DeepCopy()
	tolerant.Spec.Tolerations = []v1.Toleration{{Key: v1.TaintNodeMemoryPressure, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
	if r, _ := Admit(tolerant, mem); r != "" {
		t.Errorf("a best-effort pod tolerating the memory-pressure taint refused: %s", r)
	}
	if r, m := Admit(guaranteed, disk); r != "Evicted" || m != "The node had condition: [DiskPressure]. " {
		t.Errorf("disk pressure: %q %q", r, m)
	}
	static := be.DeepCopy()
	static.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	if r, _ := Admit(static, disk); r != "" {
		t.Errorf("a static (critical) pod refused: %s", r)
	}
}
