package agent

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/cri/cm"
	"github.com/actorlet/actorlet/node/allocatable"
)

// startCgroups makes the QoS cgroup hierarchy (--cgroups-per-qos), or
// says why it is off: not root, or no writable cgroup hierarchy. The
// systemd driver without systemd is refused: the runtime would be told
// cgroup parents nobody creates.
func (a *Agent) startCgroups() (*cm.Manager, error) {
	cfg := a.cfg
	if !cfg.CgroupsPerQOS {
		return nil, nil
	}
	driver, err := cm.ParseDriver(cfg.CgroupDriver)
	if err != nil {
		return nil, err
	}
	if err := cm.Check(driver); err != nil {
		if errors.Is(err, cm.ErrNoSystemd) {
			return nil, err
		}
		klog.InfoS("QoS cgroups are off (--cgroups-per-qos=false to silence this): pods run in the runtime's default cgroups, with no pod-level limits", "reason", err.Error())
		return nil, nil
	}
	opts := cm.Options{Driver: driver, Root: cfg.CgroupRoot}
	enforced, err := cfg.enforced()
	if err != nil {
		return nil, err
	}
	if enforced["system-reserved"] {
		opts.Reserved = append(opts.Reserved, cm.ReservedCgroup{Flag: "system-reserved-cgroup", Path: cfg.SystemReservedCgroup, Limits: a.reserved.SystemReserved})
	}
	if enforced["kube-reserved"] {
		opts.Reserved = append(opts.Reserved, cm.ReservedCgroup{Flag: "kube-reserved-cgroup", Path: cfg.KubeReservedCgroup, Limits: a.reserved.KubeReserved})
	}
	if enforced["pods"] {
		capacity := allocatable.Capacity(cfg.MaxPods, memTotal())
		if _, ok := a.reserved.SystemReserved[allocatable.ResourcePID]; ok {
			capacity[allocatable.ResourcePID] = pidMax()
		} else if _, ok := a.reserved.KubeReserved[allocatable.ResourcePID]; ok {
			capacity[allocatable.ResourcePID] = pidMax()
		}
		opts.PodsLimit = a.reserved.PodsLimit(capacity)
		delete(opts.PodsLimit, v1.ResourcePods)
	}
	m, err := cm.New(opts)
	if err != nil {
		return nil, fmt.Errorf("QoS cgroups (--cgroups-per-qos): %w", err)
	}
	klog.InfoS("QoS cgroups on", "driver", driver, "root", cfg.CgroupRoot, "kubepodsLimit", opts.PodsLimit)
	return m, nil
}

// pidMax is the kernel's pid_max, the node's capacity of process IDs.
func pidMax() resource.Quantity {
	n := int64(32768)
	if b, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		if v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && v > 0 {
			n = v
		}
	}
	return *resource.NewQuantity(n, resource.DecimalSI)
}
