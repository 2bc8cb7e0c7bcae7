package cm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/fs"
	"github.com/opencontainers/cgroups/fs2"
	cgmanager "github.com/opencontainers/cgroups/manager"
	"github.com/opencontainers/cgroups/systemd"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/messages/podrules"
	"github.com/actorlet/actorlet/node/allocatable"
)

// Options configure a Manager.
type Options struct {
	Driver Driver
	// Root is the cgroup the hierarchy is made under (--cgroup-root,
	// default "/": /kubepods).
	Root string
	// PodsLimit, when not nil (--enforce-node-allocatable=pods), limits
	// the kubepods cgroup: cpu as shares, memory, pid as the pids limit.
	PodsLimit v1.ResourceList
	// Reserved are existing cgroups limited to their reservation
	// (--enforce-node-allocatable system-reserved / kube-reserved).
	Reserved []ReservedCgroup
}

// ReservedCgroup is an existing cgroup (a cgroupfs path such as
// /system.slice) and what it is limited to: cpu as shares, memory, pid.
type ReservedCgroup struct {
	Flag   string // the flag that named it, for errors
	Path   string
	Limits v1.ResourceList
}

// limitsConfig is the ResourceConfig of a reservation or of kubepods'
// limit: cpu as shares, memory, pid as the pids limit.
func limitsConfig(l v1.ResourceList) *ResourceConfig {
	rc := &ResourceConfig{}
	if q, ok := l[v1.ResourceCPU]; ok {
		s := MilliCPUToShares(q.MilliValue())
		rc.CPUShares = &s
	}
	if q, ok := l[v1.ResourceMemory]; ok {
		v := q.Value()
		rc.Memory = &v
	}
	if q, ok := l[allocatable.ResourcePID]; ok {
		v := q.Value()
		rc.PidsLimit = &v
	}
	return rc
}

// Manager keeps the QoS hierarchy and the pods' cgroups. It is safe for
// concurrent use; every call does cgroup file I/O, so actors call it from
// their work goroutines, never from Receive.
type Manager struct {
	opts Options
	root CgroupName

	// bases are the cgroup hierarchies' directories (cgroup v1: by
	// controller; v2: "" for the unified one), found once at New; nil
	// (the systemd driver): the cgroups library finds them for each cgroup.
	bases map[string]string

	mu   sync.Mutex
	pods map[types.UID]podCgroup // pods ensured since start
	// burstableShares is what burstable's CPU shares were last set to
	// (0: not known, set again at the next update).
	burstableShares uint64
}

type podCgroup struct {
	name     CgroupName
	qos      v1.PodQOSClass
	cpuMilli int64
	limits   string // ResourceConfig.String of what was written
}

// ErrNoSystemd: the systemd driver was asked for on a host without
// systemd.
var ErrNoSystemd = errors.New("cgroup-driver systemd: systemd is not running as PID 1 on this host (use --cgroup-driver=cgroupfs)")

// Check says why QoS cgroups cannot work here (nil: they can): the
// agent must be root, the systemd driver needs systemd as PID 1, and the
// cgroup hierarchy must be writable.
func Check(d Driver) error {
	if d == DriverSystemd && !systemd.IsRunningSystemd() {
		return ErrNoSystemd
	}
	if os.Geteuid() != 0 {
		return errors.New("the agent is not root: cgroups cannot be created")
	}
	dir := "/sys/fs/cgroup"
	if !cgroups.IsCgroup2UnifiedMode() {
		dir = "/sys/fs/cgroup/memory"
	}
	if err := checkWritable(dir); err != nil {
		return fmt.Errorf("cgroup hierarchy %s is not writable: %w", dir, err)
	}
	return nil
}

func checkWritable(dir string) error {
	probe, err := os.MkdirTemp(dir, "actorlet-probe-")
	if err != nil {
		return err
	}
	return os.Remove(probe)
}

// New makes (or adopts) the QoS hierarchy: kubepods (limited to
// opts.PodsLimit), kubepods/burstable and kubepods/besteffort (cpu shares
// 2). Check first.
func New(opts Options) (*Manager, error) {
	if opts.Driver == "" {
		opts.Driver = DriverCgroupfs
	}
	if _, err := ParseDriver(string(opts.Driver)); err != nil {
		return nil, err
	}
	m := &Manager{opts: opts, root: RootName(opts.Root), pods: map[types.UID]podCgroup{}, bases: hierarchies(opts.Driver)}
	kubepods := &ResourceConfig{}
	if opts.PodsLimit != nil {
		kubepods = limitsConfig(opts.PodsLimit)
	}
	if err := m.ensure(m.kubepods(), kubepods); err != nil {
		// A limit the kernel refuses (below what pods already use, after a
		// larger reservation): the hierarchy works, unenforced.
		if err2 := m.ensure(m.kubepods(), nil); err2 != nil {
			return nil, err2
		}
		klog.ErrorS(err, "Node allocatable is not enforced on the kubepods cgroup")
	}
	for _, r := range opts.Reserved {
		n := RootName(r.Path)
		if len(n) == 0 || !m.exists(n) {
			return nil, fmt.Errorf("%s %s: the cgroup does not exist (it must, to be limited to its reservation)", r.Flag, r.Path)
		}
		if err := m.ensure(n, limitsConfig(r.Limits)); err != nil {
			return nil, fmt.Errorf("%s: %w", r.Flag, err)
		}
		klog.InfoS("Reservation enforced on its cgroup", "cgroup", r.Path, "limits", r.Limits)
	}
	min := uint64(MinShares)
	if err := m.ensure(m.kubepods().Child(BestEffortName), &ResourceConfig{CPUShares: &min}); err != nil {
		return nil, err
	}
	if err := m.ensure(m.kubepods().Child(BurstableName), &ResourceConfig{CPUShares: &min}); err != nil {
		return nil, err
	}
	m.burstableShares = min
	return m, nil
}

// hierarchies finds the directory of each cgroup hierarchy with the
// cgroupfs driver, as the cgroups library does for a cgroup it is given no
// paths for. The library reads the mount table for that, every time: it was
// 40 % of the CPU a pod's cgroup cost the agent in a pod start
// (docs/benchmarks.md §1). nil when not found, and for the systemd driver
// (its library manager finds its own): the library finds them each time.
func hierarchies(d Driver) map[string]string {
	if d != DriverCgroupfs {
		return nil
	}
	if cgroups.IsCgroup2UnifiedMode() {
		return map[string]string{"": fs2.UnifiedMountpoint}
	}
	mgr, err := fs.NewManager(&cgroups.Cgroup{Path: "/", Resources: &cgroups.Resources{SkipDevices: true}}, nil)
	if err != nil {
		return nil
	}
	return mgr.GetPaths()
}

// paths are cgroup n's directories in every hierarchy (nil: the library
// finds them).
func (m *Manager) paths(n CgroupName) map[string]string {
	if m.bases == nil {
		return nil
	}
	out := make(map[string]string, len(m.bases))
	for k, base := range m.bases {
		out[k] = filepath.Join(base, n.Cgroupfs())
	}
	return out
}

func (m *Manager) kubepods() CgroupName { return m.root.Child(KubepodsName) }

// Driver is the manager's cgroup driver.
func (m *Manager) Driver() Driver { return m.opts.Driver }

// Name is cgroup n as the manager's driver names it (what the runtime
// gets as a cgroup parent: /kubepods/burstable/pod<uid>, or with systemd
// kubepods-burstable-pod<uid>.slice).
func (m *Manager) Name(n CgroupName) string {
	if m.opts.Driver == DriverSystemd {
		return n.SystemdUnit()
	}
	return n.Cgroupfs()
}

func (m *Manager) config(n CgroupName, rc *ResourceConfig) *cgroups.Cgroup {
	res := &cgroups.Resources{SkipDevices: true}
	if rc != nil {
		if rc.CPUShares != nil {
			res.CpuShares = *rc.CPUShares
		}
		if rc.CPUQuota != nil {
			res.CpuQuota = *rc.CPUQuota
		}
		if rc.CPUPeriod != nil {
			res.CpuPeriod = *rc.CPUPeriod
		}
		if rc.Memory != nil {
			res.Memory = *rc.Memory
		}
		res.PidsLimit = rc.PidsLimit
	}
	c := &cgroups.Cgroup{Resources: res}
	if m.opts.Driver == DriverSystemd {
		c.Systemd = true
		c.Name = n.SystemdUnit()
		c.Parent = "-.slice"
		if len(n) > 1 {
			c.Parent = n[:len(n)-1].SystemdUnit()
		}
		return c
	}
	c.Path = n.Cgroupfs()
	return c
}

// ensure creates cgroup n if needed and writes rc into it.
func (m *Manager) ensure(n CgroupName, rc *ResourceConfig) error {
	cfg := m.config(n, rc)
	mgr, err := cgmanager.NewWithPaths(cfg, m.paths(n))
	if err != nil {
		return fmt.Errorf("cgroup %s: %w", m.Name(n), err)
	}
	if err := mgr.Apply(-1); err != nil {
		return fmt.Errorf("create cgroup %s: %w", m.Name(n), err)
	}
	if err := mgr.Set(cfg.Resources); err != nil {
		return fmt.Errorf("set limits of cgroup %s: %w", m.Name(n), err)
	}
	return nil
}

// dir is cgroup n's directory in the memory hierarchy (cgroup v1) or the
// unified one (v2).
func (m *Manager) dir(n CgroupName) string {
	base := "/sys/fs/cgroup"
	if !cgroups.IsCgroup2UnifiedMode() {
		base = filepath.Join(base, "memory")
	}
	if m.opts.Driver == DriverSystemd {
		return filepath.Join(base, n.Systemd())
	}
	return filepath.Join(base, n.Cgroupfs())
}

// exists reports whether cgroup n exists (a stat: a manager of the
// library reads the mount table each time).
func (m *Manager) exists(n CgroupName) bool {
	_, err := os.Stat(m.dir(n))
	return err == nil
}

// destroy removes cgroup n and any cgroup below it.
func (m *Manager) destroy(n CgroupName) error {
	mgr, err := cgmanager.NewWithPaths(m.config(n, nil), m.paths(n))
	if err != nil {
		return fmt.Errorf("cgroup %s: %w", m.Name(n), err)
	}
	if err := mgr.Destroy(); err != nil {
		return fmt.Errorf("remove cgroup %s: %w", m.Name(n), err)
	}
	return nil
}

// EnsurePod creates the pod's cgroup under its QoS class's with the
// pod's limits (ResourceConfigForPod), updates burstable's CPU shares, and
// returns the cgroup parent to give the runtime in the sandbox config.
func (m *Manager) EnsurePod(pod *v1.Pod) (string, error) {
	qos := podrules.QOSClass(pod)
	name := PodCgroupName(m.root, qos, pod.UID)
	rc := ResourceConfigForPod(pod, true)
	key := rc.String()
	m.mu.Lock()
	defer m.mu.Unlock()
	prev, known := m.pods[pod.UID]
	// A live pod is synced again and again: its cgroup, made with these
	// limits since start and still there, is left alone.
	if known && prev.limits == key && prev.qos == qos && m.exists(name) {
		return m.Name(name), nil
	}
	if err := m.ensure(name, rc); err != nil {
		return "", err
	}
	m.pods[pod.UID] = podCgroup{name: name, qos: qos, cpuMilli: podCPURequests(pod), limits: key}
	if !known || prev.cpuMilli != m.pods[pod.UID].cpuMilli || prev.qos != qos {
		m.updateQOSLocked()
	}
	return m.Name(name), nil
}

// updateQOSLocked sets burstable's CPU shares to its pods' requests. Shares
// it already has are not written again: a pod that changes no burstable
// request (any best-effort or guaranteed one) costs no write.
func (m *Manager) updateQOSLocked() {
	var milli int64
	for _, p := range m.pods {
		if p.qos == v1.PodQOSBurstable {
			milli += p.cpuMilli
		}
	}
	shares := MilliCPUToShares(milli)
	burstable := m.kubepods().Child(BurstableName)
	if shares == m.burstableShares && m.exists(burstable) {
		return
	}
	if err := m.ensure(burstable, &ResourceConfig{CPUShares: &shares}); err != nil {
		m.burstableShares = 0
		klog.ErrorS(err, "Failed to update the burstable QoS cgroup")
		return
	}
	m.burstableShares = shares
}

// RemovePod removes the pod's cgroup (its containers are gone) from
// whichever QoS class it is under.
func (m *Manager) RemovePod(uid types.UID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for _, qos := range []v1.PodQOSClass{v1.PodQOSGuaranteed, v1.PodQOSBurstable, v1.PodQOSBestEffort} {
		if err := m.destroy(PodCgroupName(m.root, qos, uid)); err != nil {
			errs = append(errs, err)
		}
	}
	if _, ok := m.pods[uid]; ok {
		delete(m.pods, uid)
		m.updateQOSLocked()
	}
	return errors.Join(errs...)
}

// PodCgroups lists the UIDs of the pod cgroups present in the hierarchy.
func (m *Manager) PodCgroups() ([]types.UID, error) {
	seen := map[types.UID]bool{}
	for _, parent := range []CgroupName{m.kubepods(), m.kubepods().Child(BurstableName), m.kubepods().Child(BestEffortName)} {
		entries, err := os.ReadDir(m.dir(parent))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, err
		}
		for _, e := range entries {
			n := e.Name()
			if m.opts.Driver == DriverSystemd {
				n = strings.TrimSuffix(n[strings.LastIndex(n, "-")+1:], ".slice")
			}
			if e.IsDir() && strings.HasPrefix(n, podPrefix) {
				uid := strings.TrimPrefix(n, podPrefix)
				if m.opts.Driver == DriverSystemd {
					uid = strings.ReplaceAll(uid, "_", "-")
				}
				seen[types.UID(uid)] = true
			}
		}
	}
	out := make([]types.UID, 0, len(seen))
	for uid := range seen {
		out = append(out, uid)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// RemoveOrphans removes the pod cgroups of pods neither ensured since
// start nor kept by keep (pods the runtime still has), as the kubelet's
// housekeeping cleans orphaned pod cgroups.
func (m *Manager) RemoveOrphans(keep func(types.UID) bool) error {
	uids, err := m.PodCgroups()
	if err != nil {
		return fmt.Errorf("list pod cgroups: %w", err)
	}
	var errs []error
	for _, uid := range uids {
		m.mu.Lock()
		_, known := m.pods[uid]
		m.mu.Unlock()
		if known || keep(uid) {
			continue
		}
		klog.InfoS("Removing orphaned pod cgroup", "podUID", uid)
		if err := m.RemovePod(uid); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Destroy removes the whole hierarchy, and the --cgroup-root cgroup when
// it is not "/" (tests, and a node taken out of service): every pod
// cgroup must be empty.
func (m *Manager) Destroy() error {
	if len(m.root) > 0 {
		return m.destroy(m.root)
	}
	return m.destroy(m.kubepods())
}
