package podrules

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// QOSClass is the pod's QoS class as the kubelet's qos.GetPodQOS computes
// it: the class already in the status wins; otherwise BestEffort when no
// container requests or limits CPU or memory, Guaranteed when every
// container limits both and the pod's requests equal its limits,
// Burstable otherwise. Pods here skip the API server's defaulting, so a
// resource with a limit but no request counts its limit as the request,
// as the API server would have set it.
func QOSClass(pod *v1.Pod) v1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	requests, limits := v1.ResourceList{}, v1.ResourceList{}
	add := func(list v1.ResourceList, name v1.ResourceName, q resource.Quantity) {
		sum := q.DeepCopy()
		if prev, ok := list[name]; ok {
			sum.Add(prev)
		}
		list[name] = sum
	}
	guaranteed := true
	for _, cs := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range cs {
			res := cs[i].Resources
			for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
				req, hasReq := res.Requests[name]
				lim, hasLim := res.Limits[name]
				if !hasReq && hasLim {
					req, hasReq = lim, true // the API server's defaulting
				}
				if hasReq && req.Sign() > 0 {
					add(requests, name, req)
				}
				if hasLim && lim.Sign() > 0 {
					add(limits, name, lim)
				} else {
					guaranteed = false
				}
			}
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return v1.PodQOSBestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return v1.PodQOSGuaranteed
	}
	return v1.PodQOSBurstable
}
