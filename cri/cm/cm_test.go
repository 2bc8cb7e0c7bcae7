package cm

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/opencontainers/cgroups"
	cgmanager "github.com/opencontainers/cgroups/manager"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestNames(t *testing.T) {
	root := RootName("/")
	n := PodCgroupName(root, v1.PodQOSBurstable, "1234-ab")
	if got := n.Cgroupfs(); got != "/kubepods/burstable/pod1234-ab" {
		t.Errorf("cgroupfs %q", got)
	}
	if got := n.Systemd(); got != "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_ab.slice" {
		t.Errorf("systemd %q", got)
	}
	if got := n.SystemdUnit(); got != "kubepods-burstable-pod1234_ab.slice" {
		t.Errorf("systemd unit %q", got)
	}
	if got := PodCgroupName(root, v1.PodQOSGuaranteed, "u").Cgroupfs(); got != "/kubepods/podu" {
		t.Errorf("guaranteed %q", got)
	}
	if got := PodCgroupName(RootName("/a//b/"), v1.PodQOSBestEffort, "u").Cgroupfs(); got != "/a/b/kubepods/besteffort/podu" {
		t.Errorf("under a root %q", got)
	}
	if _, err := ParseDriver("lxc"); err == nil || !strings.Contains(err.Error(), `cgroup-driver: "lxc"`) {
		t.Errorf("bad driver: %v", err)
	}
}

func TestCPUConversions(t *testing.T) {
	for _, tc := range []struct {
		milli  int64
		shares uint64
		quota  int64
	}{
		{0, 2, 0}, {1, 2, 1000}, {5, 5, 1000}, {100, 102, 10000}, {250, 256, 25000}, {1000, 1024, 100000},
		{2500, 2560, 250000}, {1000000, 262144, 100000000},
	} {
		if got := MilliCPUToShares(tc.milli); got != tc.shares {
			t.Errorf("shares(%dm) = %d, want %d", tc.milli, got, tc.shares)
		}
		if got := MilliCPUToQuota(tc.milli, QuotaPeriod); got != tc.quota {
			t.Errorf("quota(%dm) = %d, want %d", tc.milli, got, tc.quota)
		}
	}
}

func pod(uid string, cs ...v1.ResourceRequirements) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, UID: types.UID(uid)}}
	for i, r := range cs {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "c" + strconv.Itoa(i), Resources: r})
	}
	return p
}

func rl(kv ...string) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func TestResourceConfigForPod(t *testing.T) {
	i64 := func(p *int64) string {
		if p == nil {
			return "nil"
		}
		return strconv.FormatInt(*p, 10)
	}
	u64 := func(p *uint64) string {
		if p == nil {
			return "nil"
		}
		return strconv.FormatUint(*p, 10)
	}
	for _, tc := range []struct {
		name                         string
		pod                          *v1.Pod
		shares, quota, period, memry string
	}{
		{"besteffort", pod("be", v1.ResourceRequirements{}), "2", "nil", "nil", "nil"},
		// Limits only: requests default to them, the pod is guaranteed.
		{"guaranteed", pod("g", v1.ResourceRequirements{Limits: rl("cpu", "500m", "memory", "128Mi")},
			v1.ResourceRequirements{Limits: rl("cpu", "250m", "memory", "64Mi")}), "768", "75000", "100000", strconv.Itoa(192 << 20)},
		{"burstable with all limits", pod("b1", v1.ResourceRequirements{Requests: rl("cpu", "100m", "memory", "32Mi"), Limits: rl("cpu", "1", "memory", "64Mi")}),
			"102", "100000", "100000", strconv.Itoa(64 << 20)},
		// One container without limits: no quota, no memory limit.
		{"burstable, a container without limits", pod("b2", v1.ResourceRequirements{Requests: rl("cpu", "200m"), Limits: rl("cpu", "1", "memory", "64Mi")},
			v1.ResourceRequirements{Requests: rl("cpu", "300m")}), "512", "nil", "nil", "nil"},
	} {
		rc := ResourceConfigForPod(tc.pod, true)
		if got := [4]string{u64(rc.CPUShares), i64(rc.CPUQuota), u64(rc.CPUPeriod), i64(rc.Memory)}; got != [4]string{tc.shares, tc.quota, tc.period, tc.memry} {
			t.Errorf("%s: shares, quota, period, memory = %v, want %v", tc.name, got, [4]string{tc.shares, tc.quota, tc.period, tc.memry})
		}
	}
	g := pod("g", v1.ResourceRequirements{Limits: rl("cpu", "1", "memory", "64Mi")})
	if rc := ResourceConfigForPod(g, false); rc.CPUQuota == nil || *rc.CPUQuota != -1 {
		t.Errorf("CPU limits not enforced: quota %v, want -1", rc.CPUQuota)
	}
}

// v1File reads a cgroup v1 file of controller ctrl at cgroupfs path p.
func v1File(t *testing.T, ctrl, p, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", ctrl, p, file))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// v1Want is what a cgroup v1 file must hold; what names it in a failure.
type v1Want struct{ ctrl, path, file, want, what string }

// checkV1Files reports every file of ws that does not hold what it must.
func checkV1Files(t *testing.T, ws []v1Want) {
	t.Helper()
	for _, w := range ws {
		if got := v1File(t, w.ctrl, w.path, w.file); got != w.want {
			t.Errorf("%s %s, want %s", w.what, got, w.want)
		}
	}
}

func exists(ctrl, p string) bool {
	_, err := os.Stat(filepath.Join("/sys/fs/cgroup", ctrl, p))
	return err == nil
}

// Every cgroup's directories are where the cgroups library finds them
// itself, though the manager finds the hierarchies only once: on cgroup v1
// (each controller's, and the unified one of a hybrid host) as on v2.
// Nothing is created, so no root is needed; the systemd driver leaves
// them to its library manager.
func TestPathsAsTheLibraryFindsThem(t *testing.T) {
	if hierarchies(DriverSystemd) != nil {
		t.Error("the systemd driver's hierarchies are found by its library manager, not here")
	}
	m := &Manager{opts: Options{Driver: DriverCgroupfs}, root: RootName("/actorlet-paths-test"), bases: hierarchies(DriverCgroupfs)}
	if m.bases == nil {
		t.Skip("no cgroup hierarchy on this host")
	}
	for _, n := range []CgroupName{m.root, m.kubepods(), m.kubepods().Child(BurstableName),
		PodCgroupName(m.root, v1.PodQOSBurstable, "burst"), PodCgroupName(m.root, v1.PodQOSGuaranteed, "guar")} {
		lib, err := cgmanager.New(m.config(n, nil))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := m.paths(n), lib.GetPaths(); !reflect.DeepEqual(got, want) {
			t.Errorf("cgroup %s: directories %v, the library's %v", n.Cgroupfs(), got, want)
		}
	}
}

// As root on cgroup v1: the hierarchy under a root of the test's own, pod
// cgroups under the right QoS parent with their limits, burstable's shares
// following its pods, everything removed at the end.
func TestManagerCgroupV1(t *testing.T) {
	if err := Check(DriverCgroupfs); err != nil {
		t.Skipf("QoS cgroups unavailable: %v", err)
	}
	if cgroups.IsCgroup2UnifiedMode() {
		t.Skip("cgroup v2 host: this test reads v1 files")
	}
	root := "/actorlet-cm-test-" + strconv.Itoa(os.Getpid())
	// The system daemons' cgroup exists before the agent (under the test's
	// root, so it goes with it).
	system := root + "/system.slice"
	if err := (&Manager{opts: Options{Driver: DriverCgroupfs}}).ensure(RootName(system), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{Driver: DriverCgroupfs, Root: root, Reserved: []ReservedCgroup{{Flag: "kube-reserved-cgroup", Path: root + "/missing"}}}); err == nil ||
		!strings.Contains(err.Error(), "kube-reserved-cgroup "+root+"/missing: the cgroup does not exist") {
		t.Errorf("a reserved cgroup that does not exist: %v", err)
	}
	m, err := New(Options{Driver: DriverCgroupfs, Root: root, PodsLimit: rl("cpu", "1500m", "memory", "1Gi", "pid", "500"),
		Reserved: []ReservedCgroup{{Flag: "system-reserved-cgroup", Path: system, Limits: rl("cpu", "500m", "memory", "256Mi")}}})
	if err != nil {
		t.Fatal(err)
	}
	checkV1Files(t, []v1Want{
		{"memory", system, "memory.limit_in_bytes", strconv.Itoa(256 << 20), "system-reserved cgroup memory limit"},
		{"cpu", system, "cpu.shares", "512", "system-reserved cgroup cpu.shares"},
	})
	t.Cleanup(func() {
		if err := m.Destroy(); err != nil {
			t.Error(err)
		}
		left, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", root))
		if len(left) > 0 {
			t.Errorf("cgroups left: %v", left)
		}
	})
	kp := root + "/kubepods"
	checkV1Files(t, []v1Want{
		{"memory", kp, "memory.limit_in_bytes", strconv.Itoa(1 << 30), "kubepods memory limit"},
		{"cpu", kp, "cpu.shares", "1536", "kubepods cpu.shares"},
		{"pids", kp, "pids.max", "500", "kubepods pids.max"},
		{"cpu", kp + "/besteffort", "cpu.shares", "2", "besteffort cpu.shares"},
	})

	g := pod("guar", v1.ResourceRequirements{Limits: rl("cpu", "500m", "memory", "128Mi")})
	b := pod("burst", v1.ResourceRequirements{Requests: rl("cpu", "250m", "memory", "32Mi"), Limits: rl("memory", "64Mi")})
	be := pod("best", v1.ResourceRequirements{})
	for p, want := range map[*v1.Pod]string{g: kp + "/podguar", b: kp + "/burstable/podburst", be: kp + "/besteffort/podbest"} {
		parent, err := m.EnsurePod(p)
		if err != nil {
			t.Fatal(err)
		}
		if parent != want {
			t.Errorf("%s: parent %q, want %q", p.Name, parent, want)
		}
	}
	checkV1Files(t, []v1Want{
		{"memory", kp + "/podguar", "memory.limit_in_bytes", strconv.Itoa(128 << 20), "guaranteed memory limit"},
		{"cpu", kp + "/podguar", "cpu.cfs_quota_us", "50000", "guaranteed quota"},
		{"cpu", kp + "/podguar", "cpu.shares", "512", "guaranteed shares"},
		{"memory", kp + "/burstable/podburst", "memory.limit_in_bytes", strconv.Itoa(64 << 20), "burstable memory limit"},
		{"cpu", kp + "/burstable/podburst", "cpu.cfs_quota_us", "-1", "burstable without a cpu limit: quota"},
		{"cpu", kp + "/besteffort/podbest", "cpu.shares", "2", "besteffort pod shares"},
		{"cpu", kp + "/burstable", "cpu.shares", "256", "burstable cpu.shares (its pod's 250m)"},
	})
	// A pod that changes no burstable request does not write burstable's
	// shares again: a value set behind the manager's back stays until the
	// burstable pods change.
	burstShares := filepath.Join("/sys/fs/cgroup/cpu", kp, "burstable", "cpu.shares")
	if err := os.WriteFile(burstShares, []byte("1000"), 0o644); err != nil {
		t.Fatal(err)
	}
	be2 := pod("best2", v1.ResourceRequirements{})
	if _, err := m.EnsurePod(be2); err != nil {
		t.Fatal(err)
	}
	checkV1Files(t, []v1Want{{"cpu", kp + "/burstable", "cpu.shares", "1000", "burstable cpu.shares after a best-effort pod"}})
	if err := m.RemovePod(be2.UID); err != nil {
		t.Fatal(err)
	}
	b2 := pod("burst2", v1.ResourceRequirements{Requests: rl("cpu", "250m")})
	if _, err := m.EnsurePod(b2); err != nil {
		t.Fatal(err)
	}
	checkV1Files(t, []v1Want{{"cpu", kp + "/burstable", "cpu.shares", "512", "burstable cpu.shares with a second 250m pod"}})
	if err := m.RemovePod(b2.UID); err != nil {
		t.Fatal(err)
	}
	// A pod cgroup removed behind the manager's back is made again at the
	// next sync; one still there is left alone.
	if err := m.destroy(PodCgroupName(m.root, v1.PodQOSGuaranteed, "guar")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.EnsurePod(g); err != nil {
		t.Fatal(err)
	}
	checkV1Files(t, []v1Want{
		{"memory", kp + "/podguar", "memory.limit_in_bytes", strconv.Itoa(128 << 20), "re-made guaranteed memory limit"},
	})
	uids, err := m.PodCgroups()
	if err != nil || len(uids) != 3 {
		t.Errorf("pod cgroups %v %v", uids, err)
	}
	if err := m.RemovePod("burst"); err != nil {
		t.Fatal(err)
	}
	if exists("memory", kp+"/burstable/podburst") || exists("cpu", kp+"/burstable/podburst") {
		t.Error("removed pod's cgroup left")
	}
	checkV1Files(t, []v1Want{
		{"cpu", kp + "/burstable", "cpu.shares", "2", "burstable cpu.shares after its pod left"},
	})
	// An orphan: a pod cgroup of an earlier run no one knows.
	m2, err := New(Options{Driver: DriverCgroupfs, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if err := m2.RemoveOrphans(func(uid types.UID) bool { return uid == "guar" }); err != nil {
		t.Fatal(err)
	}
	if exists("memory", kp+"/besteffort/podbest") || !exists("memory", kp+"/podguar") {
		t.Error("orphan sweep: besteffort pod should be gone, the kept guaranteed one left")
	}
}

// The systemd driver where systemd is not PID 1 is refused with the reason
// and what to do.
func TestCheckSystemdDriverWithoutSystemd(t *testing.T) {
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		t.Skip("systemd runs here")
	}
	err := Check(DriverSystemd)
	if err == nil || !strings.Contains(err.Error(), "systemd is not running as PID 1") || !strings.Contains(err.Error(), "--cgroup-driver=cgroupfs") {
		t.Errorf("Check(systemd) = %v", err)
	}
}

// BenchmarkEnsurePod measures one EnsurePod of a pod whose cgroup exists
// (what every sync of a live pod costs) and the creation and removal of a
// fresh pod cgroup. Root and cgroup v1 only; the test's hierarchy is
// removed at the end.
func BenchmarkEnsurePod(b *testing.B) {
	if err := Check(DriverCgroupfs); err != nil {
		b.Skipf("QoS cgroups unavailable: %v", err)
	}
	root := "/actorlet-cm-bench-" + strconv.Itoa(os.Getpid())
	m, err := New(Options{Driver: DriverCgroupfs, Root: root})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := m.Destroy(); err != nil {
			b.Error(err)
		}
	})
	p := pod("bench", v1.ResourceRequirements{Requests: rl("cpu", "100m"), Limits: rl("memory", "64Mi")})
	b.Run("existing", func(b *testing.B) {
		for b.Loop() {
			if _, err := m.EnsurePod(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	// A best-effort pod changes no burstable shares: its cgroup is all
	// the cgroup work of its start and teardown.
	b.Run("create-remove-besteffort", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			q := pod("besteffort" + strconv.Itoa(i))
			if _, err := m.EnsurePod(q); err != nil {
				b.Fatal(err)
			}
			if err := m.RemovePod(q.UID); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("create-remove", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			q := pod("fresh"+strconv.Itoa(i), v1.ResourceRequirements{Requests: rl("cpu", "100m"), Limits: rl("memory", "64Mi")})
			if _, err := m.EnsurePod(q); err != nil {
				b.Fatal(err)
			}
			if err := m.RemovePod(q.UID); err != nil {
				b.Fatal(err)
			}
		}
	})
}
