// Package cm is the node's container manager for cgroups, as the
// kubelet's pkg/kubelet/cm: the QoS hierarchy (kubepods, burstable,
// besteffort), one cgroup per pod with the pod's CPU and memory limits, and
// the kubepods limit that enforces node Allocatable. Cgroups are made with
// github.com/opencontainers/cgroups (cgroupfs or systemd driver, cgroup v1
// or v2).
package cm

import (
	"fmt"
	"path"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Driver names how cgroups are named and created (--cgroup-driver).
type Driver string

const (
	DriverCgroupfs Driver = "cgroupfs"
	DriverSystemd  Driver = "systemd"
)

// The kubelet's cgroup names.
const (
	KubepodsName   = "kubepods"
	BurstableName  = "burstable"
	BestEffortName = "besteffort"
	podPrefix      = "pod"
)

// CgroupName is a cgroup as its path components, driver-independent (the
// kubelet's CgroupName): {"kubepods", "burstable", "pod<uid>"}.
type CgroupName []string

// Child is n with one more component.
func (n CgroupName) Child(c string) CgroupName {
	return append(append(CgroupName(nil), n...), c)
}

// Cgroupfs is n as a cgroupfs path: /kubepods/burstable/pod<uid>.
func (n CgroupName) Cgroupfs() string { return "/" + path.Join(n...) }

// Systemd is n as a systemd slice path:
// /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice,
// with "-" in a component escaped to "_" as the kubelet escapes it.
func (n CgroupName) Systemd() string {
	if len(n) == 0 {
		return "/"
	}
	var b strings.Builder
	prefix := ""
	for _, c := range n {
		c = strings.ReplaceAll(c, "-", "_")
		if prefix == "" {
			prefix = c
		} else {
			prefix += "-" + c
		}
		b.WriteString("/" + prefix + ".slice")
	}
	return b.String()
}

// SystemdUnit is the last slice of n: kubepods-burstable-pod<uid>.slice.
func (n CgroupName) SystemdUnit() string { return path.Base(n.Systemd()) }

// Name is n as the driver names it.
func (d Driver) Name(n CgroupName) string {
	if d == DriverSystemd {
		return n.Systemd()
	}
	return n.Cgroupfs()
}

// ParseDriver checks a --cgroup-driver value.
func ParseDriver(s string) (Driver, error) {
	switch Driver(s) {
	case DriverCgroupfs, DriverSystemd:
		return Driver(s), nil
	}
	return "", fmt.Errorf("cgroup-driver: %q: want cgroupfs or systemd", s)
}

// PodCgroupName is the pod's cgroup under root: guaranteed pods directly
// under kubepods, the others under their QoS class's cgroup.
func PodCgroupName(root CgroupName, qos v1.PodQOSClass, uid types.UID) CgroupName {
	parent := root.Child(KubepodsName)
	switch qos {
	case v1.PodQOSBurstable:
		parent = parent.Child(BurstableName)
	case v1.PodQOSBestEffort:
		parent = parent.Child(BestEffortName)
	}
	return parent.Child(podPrefix + string(uid))
}

// RootName splits a --cgroup-root path ("/" or "/a/b") into components.
func RootName(root string) CgroupName {
	var out CgroupName
	for _, c := range strings.Split(strings.Trim(path.Clean("/"+root), "/"), "/") {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}
