package fleet

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/cgroups"

	"github.com/actorlet/actorlet/cri/cm"
	"github.com/actorlet/actorlet/node/agent"
	"github.com/actorlet/actorlet/test/testenv"
	"github.com/actorlet/actorlet/test/testutil"
)

// testQOSCgroups: as root on cgroup v1, a real agent on the process
// runtime puts each pod in its cgroup under the right QoS parent (a
// guaranteed pod directly under kubepods, the others under burstable and
// besteffort) with the kubelet's limits, runs its containers inside it,
// and removes the pod's cgroup once the pod is deleted. The hierarchy
// lives under a --cgroup-root of the test's own and is removed at the end.
func testQOSCgroups(t *testing.T, f *fleet) {
	if err := cm.Check(cm.DriverCgroupfs); err != nil {
		t.Skipf("QoS cgroups unavailable: %v", err)
	}
	if cgroups.IsCgroup2UnifiedMode() {
		t.Skip("cgroup v2 host: this test reads v1 files")
	}
	root := "/actorlet-qos-test-" + strconv.Itoa(os.Getpid())
	// Registered first: runs last, after the agent and the runtime (and so
	// every container) are gone.
	testenv.CgroupRoot(t, root)
	n := f.startNodeOn(t, "qos-n1", nil, func(c *agent.Config) {
		c.CgroupsPerQOS = true
		c.CgroupRoot = root
		c.SystemReserved = "memory=64Mi"
	}, true)
	dir := t.TempDir()
	res := func(name, resources string) string {
		return testutil.WriteFile(t, dir, name+".yaml", podYAML(name, "sleep 600", "    resources:\n"+resources))
	}
	f.mustCtl(t, "apply", "-f", res("guaranteed", "      limits:\n        cpu: 500m\n        memory: 128Mi\n"), "--node", n.name)
	f.mustCtl(t, "apply", "-f", res("burstable", "      requests:\n        cpu: 250m\n        memory: 32Mi\n      limits:\n        memory: 64Mi\n"), "--node", n.name)
	f.mustCtl(t, "apply", "-f", res("besteffort", "      {}\n"), "--node", n.name)

	read := func(ctrl, p, file string) string { return testenv.ReadCgroupV1(t, ctrl, p, file) }
	kp := root + "/kubepods"
	pods := map[string]string{}
	for name, parent := range map[string]string{"guaranteed": kp, "burstable": kp + "/burstable", "besteffort": kp + "/besteffort"} {
		p := f.waitRunning(t, n.name, "default", name)
		pods[name] = parent + "/pod" + string(p.UID)
		// The container runs inside the pod's cgroup (the process
		// runtime's container cgroup under its sandbox's cgroup parent).
		cid := containerID(t, p, "app")
		if _, id, ok := strings.Cut(cid, "://"); ok {
			cid = id
		}
		procs := read("memory", pods[name]+"/"+cid, "cgroup.procs")
		if procs == "" {
			t.Errorf("%s: no process in the container cgroup under %s", name, pods[name])
		}
	}
	testenv.CheckCgroupV1(t, []testenv.CgroupV1Want{
		{Ctrl: "memory", Path: pods["guaranteed"], File: "memory.limit_in_bytes", Want: strconv.Itoa(128 << 20), What: "guaranteed pod memory limit"},
		{Ctrl: "cpu", Path: pods["guaranteed"], File: "cpu.cfs_quota_us", Want: "50000", What: "guaranteed pod cpu quota"},
		{Ctrl: "cpu", Path: pods["burstable"], File: "cpu.shares", Want: "256", What: "burstable pod cpu.shares"},
		{Ctrl: "memory", Path: pods["burstable"], File: "memory.limit_in_bytes", Want: strconv.Itoa(64 << 20), What: "burstable pod memory limit"},
		{Ctrl: "cpu", Path: kp + "/burstable", File: "cpu.shares", Want: "256", What: "burstable QoS cgroup cpu.shares (its one pod's)"},
		{Ctrl: "cpu", Path: pods["besteffort"], File: "cpu.shares", Want: "2", What: "besteffort pod cpu.shares"},
	})
	memTotal := read("memory", kp, "memory.limit_in_bytes")
	if v, _ := strconv.ParseInt(memTotal, 10, 64); v <= 0 || v >= 1<<62 {
		t.Errorf("kubepods memory limit %q: want capacity minus system-reserved", memTotal)
	}

	for name := range pods {
		f.mustCtl(t, "delete", "pod", name, "--node", n.name)
	}
	for name, p := range pods {
		f.waitGone(t, n.name, "default", name)
		eventually(t, 30*time.Second, func() error {
			for _, ctrl := range []string{"memory", "cpu", "pids"} {
				if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", ctrl, p)); err == nil {
					return fmt.Errorf("%s: pod cgroup %s still in %s", name, p, ctrl)
				}
			}
			return nil
		})
	}
}
