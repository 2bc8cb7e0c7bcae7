package eviction

import (
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/podrules"
)

// The kubelet's words (pkg/kubelet/eviction/helpers.go), trailing spaces
// included.
const (
	// Reason is an evicted pod's status reason, its event's reason and the
	// admission reason of a pod refused under pressure.
	Reason                  = "Evicted"
	nodeLowMessageFmt       = "The node was low on resource: %v. "
	thresholdMetMessageFmt  = "Threshold quantity: %v, available: %v. "
	containerMessageFmt     = "Container %s was using %s, request is %s, has larger consumption of %v. "
	nodeConditionMessageFmt = "The node had condition: %v. "
)

// systemCriticalPriority is scheduling.SystemCriticalPriority: pods at or
// above it, and static pods, are never evicted (kubelettypes.IsCriticalPod).
const systemCriticalPriority int32 = 2000000000

type cmpFunc func(p1, p2 *v1.Pod) int

// usageFunc is a pod's usage of the resource a signal ranks by.
type usageFunc func(p *v1.Pod, s PodStats) uint64

// rank sorts pods for the threshold's signal, the first to evict first
// (the kubelet's rankMemoryPressure, rankDiskPressureFunc, rankPIDPressure);
// dedicated says the image filesystem is not the node filesystem.
func rank(sig Signal, pods []*v1.Pod, stats map[types.UID]PodStats, dedicated bool) {
	get := func(p *v1.Pod) (PodStats, bool) { s, ok := stats[p.UID]; return s, ok }
	var cmps []cmpFunc
	switch sig {
	case SignalMemoryAvailable:
		use := func(_ *v1.Pod, s PodStats) uint64 { return s.memory() }
		cmps = []cmpFunc{exceedsRequests(get, v1.ResourceMemory, use), byPriority, usageOverRequest(get, v1.ResourceMemory, use)}
	case SignalPIDAvailable:
		cmps = []cmpFunc{byPriority, byProcesses(get)}
	default:
		// Bytes against ephemeral-storage requests, or inodes (nothing
		// requests them: any use exceeds), as the kubelet's.
		parts, res := diskPartsFor(sig, dedicated), signalResource[sig]
		use := func(p *v1.Pod, s PodStats) uint64 { return diskUsage(p, s, parts) }
		cmps = []cmpFunc{exceedsRequests(get, res, use), byPriority, usageOverRequest(get, res, use)}
	}
	sort.SliceStable(pods, func(i, j int) bool {
		for _, c := range cmps {
			if r := c(pods[i], pods[j]); r != 0 {
				return r < 0
			}
		}
		return false
	})
}

// cmpBool orders true before false.
func cmpBool(a, b bool) int {
	if a == b {
		return 0
	}
	if !b {
		return -1
	}
	return 1
}

func podRequest(p *v1.Pod, name v1.ResourceName) *resource.Quantity {
	req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	q := req[name]
	return &q
}

func priority(p *v1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

// byPriority puts lower priorities first.
func byPriority(p1, p2 *v1.Pod) int {
	a, b := priority(p1), priority(p2)
	switch {
	case a == b:
		return 0
	case a > b:
		return 1
	}
	return -1
}

// exceedsRequests puts pods using more than they request first; a pod
// without stats comes before one with them.
func exceedsRequests(get func(*v1.Pod) (PodStats, bool), name v1.ResourceName, use usageFunc) cmpFunc {
	exceeds := func(p *v1.Pod, s PodStats) bool {
		return resource.NewQuantity(int64(use(p, s)), resource.BinarySI).Cmp(*podRequest(p, name)) > 0
	}
	return byStats(get, func(p1 *v1.Pod, s1 PodStats, p2 *v1.Pod, s2 PodStats) int {
		return cmpBool(exceeds(p1, s1), exceeds(p2, s2))
	})
}

// usageOverRequest puts the pod using most above its request first.
func usageOverRequest(get func(*v1.Pod) (PodStats, bool), name v1.ResourceName, use usageFunc) cmpFunc {
	over := func(p *v1.Pod, s PodStats) *resource.Quantity {
		u := resource.NewQuantity(int64(use(p, s)), resource.BinarySI)
		u.Sub(*podRequest(p, name))
		return u
	}
	return byStats(get, func(p1 *v1.Pod, s1 PodStats, p2 *v1.Pod, s2 PodStats) int {
		return over(p2, s2).Cmp(*over(p1, s1))
	})
}

// byProcesses puts the pod running most processes first.
func byProcesses(get func(*v1.Pod) (PodStats, bool)) cmpFunc {
	return byStats(get, func(_ *v1.Pod, s1 PodStats, _ *v1.Pod, s2 PodStats) int {
		switch {
		case s1.Processes == s2.Processes:
			return 0
		case s1.Processes > s2.Processes:
			return -1
		}
		return 1
	})
}

// byStats compares two pods by their stats (get) with compare; a pod
// without stats comes before one with them.
func byStats(get func(*v1.Pod) (PodStats, bool), compare func(p1 *v1.Pod, s1 PodStats, p2 *v1.Pod, s2 PodStats) int) cmpFunc {
	return func(p1, p2 *v1.Pod) int {
		s1, ok1 := get(p1)
		s2, ok2 := get(p2)
		if !ok1 || !ok2 {
			return cmpBool(!ok1, !ok2)
		}
		return compare(p1, s1, p2, s2)
	}
}

// critical pods are never evicted: static pods and system-critical
// priorities (the kubelet's IsCriticalPod).
func critical(p *v1.Pod) bool {
	return priority(p) >= systemCriticalPriority || messages.IsStatic(p)
}

// evictionMessage is the evicted pod's status message, as the kubelet's
// evictionMessage: the resource, the threshold and what was available,
// and each container using more than it requests.
func evictionMessage(th Threshold, obs map[Signal]observation, pod *v1.Pod, stats map[types.UID]PodStats) string {
	res := signalResource[th.Signal]
	msg := fmt.Sprintf(nodeLowMessageFmt, res)
	quantity, available := thresholdAmount(th, obs)
	msg += fmt.Sprintf(thresholdMetMessageFmt, quantity.String(), available.String())
	if res != v1.ResourceMemory && res != v1.ResourceEphemeralStorage {
		return msg
	}
	ps, ok := stats[pod.UID]
	if !ok {
		return msg
	}
	for _, c := range pod.Spec.Containers {
		for _, cs := range ps.Containers {
			if cs.Name != c.Name {
				continue
			}
			usage := resourceBytes(cs.MemoryWorkingSet)
			if res == v1.ResourceEphemeralStorage {
				usage = ephemeralQuantity(cs)
			}
			req := c.Resources.Requests[res]
			if usage.Cmp(req) > 0 {
				msg += fmt.Sprintf(containerMessageFmt, c.Name, usage.String(), req.String(), res)
			}
		}
	}
	return msg
}

// Admit is the kubelet's eviction admit handler: under no pressure every
// pod is admitted; under memory pressure alone, all but best-effort ones
// (those tolerating the memory-pressure taint too); under any other
// pressure none but critical ones. It returns the reason and message of
// a refusal, or empty strings.
func Admit(pod *v1.Pod, conditions []v1.NodeConditionType) (reason, message string) {
	if len(conditions) == 0 || critical(pod) {
		return "", ""
	}
	if len(conditions) == 1 && conditions[0] == v1.NodeMemoryPressure {
		if podrules.QOSClass(pod) != v1.PodQOSBestEffort {
			return "", ""
		}
		for _, t := range pod.Spec.Tolerations {
			if t.ToleratesTaint(klog.Background(), &v1.Taint{Key: v1.TaintNodeMemoryPressure, Effect: v1.TaintEffectNoSchedule}, false) {
				return "", ""
			}
		}
	}
	return Reason, fmt.Sprintf(nodeConditionMessageFmt, conditions)
}
