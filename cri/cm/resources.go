package cm

import (
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/actorlet/actorlet/messages/podrules"
)

// The kubelet's CPU conversions (pkg/kubelet/cm/helpers_linux.go).
const (
	MinShares      = 2
	MaxShares      = 262144
	SharesPerCPU   = 1024
	MilliCPUToCPU  = 1000
	QuotaPeriod    = 100000 // µs: the CFS period
	MinQuotaPeriod = 1000   // µs: the least quota the kernel takes
)

// ResourceConfig is what a cgroup is limited to; nil fields are left as
// they are.
type ResourceConfig struct {
	CPUShares *uint64
	CPUQuota  *int64 // -1: unlimited
	CPUPeriod *uint64
	Memory    *int64 // bytes
	PidsLimit *int64
}

// String shows the set fields, e.g. "shares=256 memory=67108864".
func (rc *ResourceConfig) String() string {
	var parts []string
	if rc.CPUShares != nil {
		parts = append(parts, "shares="+strconv.FormatUint(*rc.CPUShares, 10))
	}
	if rc.CPUQuota != nil {
		parts = append(parts, "quota="+strconv.FormatInt(*rc.CPUQuota, 10))
	}
	if rc.CPUPeriod != nil {
		parts = append(parts, "period="+strconv.FormatUint(*rc.CPUPeriod, 10))
	}
	if rc.Memory != nil {
		parts = append(parts, "memory="+strconv.FormatInt(*rc.Memory, 10))
	}
	if rc.PidsLimit != nil {
		parts = append(parts, "pids="+strconv.FormatInt(*rc.PidsLimit, 10))
	}
	return strings.Join(parts, " ")
}

// MilliCPUToShares converts milli-CPUs to cpu.shares, clamped to the
// kernel's range; no request gets the minimum.
func MilliCPUToShares(milliCPU int64) uint64 {
	if milliCPU == 0 {
		return MinShares
	}
	shares := milliCPU * SharesPerCPU / MilliCPUToCPU
	switch {
	case shares < MinShares:
		return MinShares
	case shares > MaxShares:
		return MaxShares
	}
	return uint64(shares)
}

// MilliCPUToQuota converts a milli-CPU limit to a CFS quota over period
// µs; 0 (no limit) stays 0, and a quota is at least MinQuotaPeriod.
func MilliCPUToQuota(milliCPU, period int64) int64 {
	if milliCPU == 0 {
		return 0
	}
	quota := milliCPU * period / MilliCPUToCPU
	if quota < MinQuotaPeriod {
		quota = MinQuotaPeriod
	}
	return quota
}

// withDefaultRequests is pod with the API server's defaulting applied: a
// container resource with a limit and no request requests its limit (pods
// reach the node without that defaulting).
func withDefaultRequests(pod *v1.Pod) *v1.Pod {
	p := pod.DeepCopy()
	for _, cs := range [][]v1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for i := range cs {
			r := &cs[i].Resources
			for name, lim := range r.Limits {
				if _, ok := r.Requests[name]; !ok {
					if r.Requests == nil {
						r.Requests = v1.ResourceList{}
					}
					r.Requests[name] = lim.DeepCopy()
				}
			}
		}
	}
	return p
}

// ResourceConfigForPod is the pod cgroup's limits as the kubelet computes
// them: CPU shares from the requests, a CFS quota and a memory limit when
// every container declares those limits (always for a guaranteed pod),
// shares of 2 and nothing else for a best-effort pod. enforceCPULimits
// false leaves the quota unlimited.
func ResourceConfigForPod(pod *v1.Pod, enforceCPULimits bool) *ResourceConfig {
	p := withDefaultRequests(pod)
	reqs := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	limits := resourcehelper.PodLimits(p, resourcehelper.PodResourcesOptions{})
	cpuRequests := reqs.Cpu().MilliValue()
	cpuLimits := limits.Cpu().MilliValue()
	memoryLimits := limits.Memory().Value()

	cpuLimitsDeclared, memoryLimitsDeclared := true, true
	for _, cs := range [][]v1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for _, c := range cs {
			if c.Resources.Limits.Cpu().IsZero() {
				cpuLimitsDeclared = false
			}
			if c.Resources.Limits.Memory().IsZero() {
				memoryLimitsDeclared = false
			}
		}
	}
	period := uint64(QuotaPeriod)
	shares := MilliCPUToShares(cpuRequests)
	quota := MilliCPUToQuota(cpuLimits, int64(period))
	if !enforceCPULimits {
		quota = -1
	}
	out := &ResourceConfig{}
	switch podrules.QOSClass(pod) {
	case v1.PodQOSGuaranteed:
		out.CPUShares, out.CPUQuota, out.CPUPeriod, out.Memory = &shares, &quota, &period, &memoryLimits
	case v1.PodQOSBurstable:
		out.CPUShares = &shares
		if cpuLimitsDeclared {
			out.CPUQuota, out.CPUPeriod = &quota, &period
		}
		if memoryLimitsDeclared {
			out.Memory = &memoryLimits
		}
	default:
		min := uint64(MinShares)
		out.CPUShares = &min
	}
	return out
}

// podCPURequests is the pod's CPU request in milli-CPUs (burstable's
// shares are the sum over its pods).
func podCPURequests(pod *v1.Pod) int64 {
	reqs := resourcehelper.PodRequests(withDefaultRequests(pod), resourcehelper.PodResourcesOptions{})
	return reqs.Cpu().MilliValue()
}
