//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/actorlet/actorlet/cri/cm"
	"github.com/actorlet/actorlet/test/testenv"
)

// QoS cgroups on containerd (cgroupfs, cgroup v1 on the test machine): each
// pod's cgroup sits under its QoS parent with the kubelet's limits,
// containerd puts the pod's containers under it (the sandbox's
// cgroup_parent), and the pod's cgroup goes when the pod is deleted. The
// hierarchy lives under a --cgroup-root of the run's own, removed at the
// end.
func TestQOSCgroups(t *testing.T) {
	if err := cm.Check(cm.DriverCgroupfs); err != nil {
		t.Skipf("QoS cgroups unavailable: %v", err)
	}
	root := "/actorlet-e2e-qos-" + runID
	testenv.CgroupRoot(t, root) // registered first: runs after the agent's cleanup
	a := startAgent(t, agentOptions{args: []string{"--cgroups-per-qos=true", "--cgroup-root", root, "--cgroup-driver", "cgroupfs"}})

	withResources := func(p *v1.Pod, r v1.ResourceRequirements) *v1.Pod {
		p.Spec.Containers[0].Resources = r
		return p
	}
	q := resource.MustParse
	guaranteed := withResources(shPod("qos-guaranteed", "sleep 3600"), v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: q("500m"), v1.ResourceMemory: q("128Mi")},
		Limits:   v1.ResourceList{v1.ResourceCPU: q("500m"), v1.ResourceMemory: q("128Mi")},
	})
	burstable := withResources(shPod("qos-burstable", "sleep 3600"), v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: q("250m"), v1.ResourceMemory: q("32Mi")},
		Limits:   v1.ResourceList{v1.ResourceMemory: q("64Mi")},
	})
	besteffort := shPod("qos-besteffort", "sleep 3600")
	a.apply(t, guaranteed, burstable, besteffort)

	read := func(ctrl, p, file string) string { return testenv.ReadCgroupV1(t, ctrl, p, file) }
	kp := root + "/kubepods"
	pods := map[string]string{}
	for name, parent := range map[string]string{"qos-guaranteed": kp, "qos-burstable": kp + "/burstable", "qos-besteffort": kp + "/besteffort"} {
		p := a.waitPod(t, name, 2*time.Minute, isRunning)
		pods[name] = parent + "/pod" + string(p.UID)
		cs := containerStatus(p, "main")
		if cs == nil {
			t.Fatalf("%s: no container status", name)
		}
		_, id, _ := strings.Cut(cs.ContainerID, "://")
		// containerd (cgroupfs) makes the container's cgroup under the
		// sandbox's cgroup parent.
		if procs := read("memory", pods[name]+"/"+id, "cgroup.procs"); procs == "" {
			t.Errorf("%s: no process in %s/%s", name, pods[name], id)
		}
	}
	testenv.CheckCgroupV1(t, []testenv.CgroupV1Want{
		{Ctrl: "memory", Path: pods["qos-guaranteed"], File: "memory.limit_in_bytes", Want: strconv.Itoa(128 << 20), What: "guaranteed pod memory limit"},
		{Ctrl: "cpu", Path: pods["qos-guaranteed"], File: "cpu.cfs_quota_us", Want: "50000", What: "guaranteed pod cpu quota"},
		{Ctrl: "cpu", Path: pods["qos-burstable"], File: "cpu.shares", Want: "256", What: "burstable pod cpu.shares"},
		{Ctrl: "cpu", Path: pods["qos-besteffort"], File: "cpu.shares", Want: "2", What: "besteffort pod cpu.shares"},
	})

	for name := range pods {
		a.mustCtl(t, "delete", "pod", name, "-n", namespace, "--wait")
	}
	for name, p := range pods {
		eventually(t, time.Minute, func() error {
			if _, err := os.Stat(filepath.Join("/sys/fs/cgroup/memory", p)); err == nil {
				return fmt.Errorf("%s: pod cgroup %s still there", name, p)
			}
			return nil
		})
	}
}
