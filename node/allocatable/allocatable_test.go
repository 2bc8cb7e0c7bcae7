package allocatable

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestParseReservation(t *testing.T) {
	got, err := ParseReservation("--kube-reserved", "cpu=100m, memory=256Mi,pid=1000,ephemeral-storage=1Gi")
	if err != nil {
		t.Fatal(err)
	}
	want := v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("256Mi"),
		ResourcePID: resource.MustParse("1000"), v1.ResourceEphemeralStorage: resource.MustParse("1Gi"),
	}
	for k, q := range want {
		if g := got[k]; g.Cmp(q) != 0 {
			t.Errorf("%s = %s, want %s", k, g.String(), q.String())
		}
	}
	if l, err := ParseReservation("--kube-reserved", ""); err != nil || len(l) != 0 {
		t.Errorf("empty: %v %v", l, err)
	}
}

func TestParseReservationHostile(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"gpu=1", "--system-reserved: gpu: unknown resource"},
		{"cpu=-1", "--system-reserved: cpu=-1: must not be negative"},
		{"cpu=lots", "--system-reserved: cpu=lots:"},
		{"cpu", `--system-reserved: "cpu": want KEY=VALUE`},
		{"cpu=1,cpu=2", "--system-reserved: cpu given twice"},
		{strings.Repeat("cpu=1,", 17) + "memory=1", "--system-reserved: 18 entries, limit is 16"},
		{"memory=" + strings.Repeat("9", 2000), "--system-reserved: 2007 bytes, limit is 1024"},
	} {
		_, err := ParseReservation("--system-reserved", tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.40q: err %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestParseEvictionHard(t *testing.T) {
	got, err := ParseEvictionHard("--eviction-hard", DefaultEvictionHard)
	if err != nil {
		t.Fatal(err)
	}
	if q := got[SignalMemoryAvailable].Quantity; q == nil || q.Cmp(resource.MustParse("100Mi")) != 0 {
		t.Errorf("memory.available = %v", got[SignalMemoryAvailable])
	}
	if p := got[SignalNodeFsAvailable].Percentage; p != 0.1 {
		t.Errorf("nodefs.available = %v", p)
	}
	for _, tc := range []struct{ in, want string }{
		{"memory.free<1Gi", "--eviction-hard: memory.free: unknown signal"},
		{"memory.available<0%", "memory.available<0%: a percentage must be a number in (0, 100]"},
		{"memory.available<101%", "a percentage must be a number in (0, 100]"},
		{"memory.available<-1", "must not be negative"},
		{"memory.available>1Gi", `want KEY<VALUE`},
	} {
		_, err := ParseEvictionHard("--eviction-hard", tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestAllocatable(t *testing.T) {
	capacity := v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"),
		v1.ResourcePods: resource.MustParse("110"), v1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	evict, err := ParseEvictionHard("--eviction-hard", "memory.available<100Mi,nodefs.available<10%")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		SystemReserved: v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("1Gi")},
		KubeReserved:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("512Mi"), ResourcePID: resource.MustParse("100")},
		EvictionHard:   evict,
	}
	got := cfg.Allocatable(capacity)
	for name, want := range map[v1.ResourceName]string{
		v1.ResourceCPU:              "3250m",
		v1.ResourceMemory:           "6556Mi", // 8192 − 1024 − 512 − 100
		v1.ResourcePods:             "110",
		v1.ResourceEphemeralStorage: "90Gi",
	} {
		if g := got[name]; g.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("allocatable %s = %s, want %s", name, g.String(), want)
		}
	}
	if _, ok := got[ResourcePID]; ok {
		t.Errorf("pid is not an allocatable resource: %v", got)
	}
	lim := cfg.PodsLimit(capacity)
	if g := lim[v1.ResourceMemory]; g.Cmp(resource.MustParse("6656Mi")) != 0 {
		t.Errorf("pods limit memory = %s, want 6656Mi (no eviction threshold)", g.String())
	}
	// A reservation larger than the machine leaves zero, not a negative.
	huge := Config{SystemReserved: v1.ResourceList{v1.ResourceCPU: resource.MustParse("64")}}
	if g := huge.Allocatable(capacity)[v1.ResourceCPU]; g.Sign() != 0 {
		t.Errorf("over-reserved cpu = %s, want 0", g.String())
	}
	// Nothing reserved: Allocatable is Capacity.
	for name, q := range (Config{}).Allocatable(capacity) {
		if c := capacity[name]; c.Cmp(q) != 0 {
			t.Errorf("%s = %s, want %s", name, q.String(), c.String())
		}
	}
}

// The ephemeral-storage capacity is the size of the root directory's
// filesystem; a missing directory is an error naming it.
func TestEphemeralStorage(t *testing.T) {
	q, err := EphemeralStorage(t.TempDir())
	if err != nil || q.Sign() <= 0 {
		t.Fatalf("EphemeralStorage = %s, %v", q.String(), err)
	}
	if _, err := EphemeralStorage("/nonexistent/actorlet-root"); err == nil || !strings.Contains(err.Error(), "ephemeral-storage capacity: statfs /nonexistent/actorlet-root") {
		t.Fatalf("missing root dir: %v", err)
	}
}
