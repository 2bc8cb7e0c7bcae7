package status

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/actorlet/actorlet/messages"
)

func resources(kv ...string) v1.ResourceList {
	l := v1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

// TestPodQOS follows the kubelet's qos.GetPodQOS cases.
func TestPodQOS(t *testing.T) {
	c := func(req, lim v1.ResourceList) v1.Container {
		return v1.Container{Name: "c", Resources: v1.ResourceRequirements{Requests: req, Limits: lim}}
	}
	for _, tc := range []struct {
		name       string
		containers []v1.Container
		init       []v1.Container
		want       v1.PodQOSClass
	}{
		{"nothing", []v1.Container{c(nil, nil)}, nil, v1.PodQOSBestEffort},
		{"zero requests", []v1.Container{c(resources("cpu", "0"), nil)}, nil, v1.PodQOSBestEffort},
		{"only other resources", []v1.Container{c(resources("ephemeral-storage", "1Gi"), nil)}, nil, v1.PodQOSBestEffort},
		{"equal requests and limits", []v1.Container{c(resources("cpu", "1", "memory", "1Gi"), resources("cpu", "1", "memory", "1Gi"))}, nil, v1.PodQOSGuaranteed},
		{"limits only (requests defaulted)", []v1.Container{c(nil, resources("cpu", "1", "memory", "1Gi"))}, nil, v1.PodQOSGuaranteed},
		{"cpu limit only", []v1.Container{c(nil, resources("cpu", "1"))}, nil, v1.PodQOSBurstable},
		{"requests below limits", []v1.Container{c(resources("cpu", "500m", "memory", "1Gi"), resources("cpu", "1", "memory", "1Gi"))}, nil, v1.PodQOSBurstable},
		{"one guaranteed one best effort", []v1.Container{c(nil, resources("cpu", "1", "memory", "1Gi")), c(nil, nil)}, nil, v1.PodQOSBurstable},
		{"init container counts", []v1.Container{c(nil, nil)}, []v1.Container{c(resources("memory", "1Gi"), nil)}, v1.PodQOSBurstable},
	} {
		pod := &v1.Pod{Spec: v1.PodSpec{Containers: tc.containers, InitContainers: tc.init}}
		if got := podQOS(pod); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestStatusCarriesQOSClass(t *testing.T) {
	root, pid, sink, _ := spawnStatus(t)
	pod := testPod(v1.RestartPolicyAlways, containerSpec{name: "app"})
	root.Send(pid, &messages.PodStatusComputed{Pod: pod, Status: computed(v1.PodRunning, running("app", "c1"))})
	got := waitFor(t, sink, pod.UID, "status", func(s v1.PodStatus) bool { return s.Phase == v1.PodRunning })
	if got.Pod.Status.QOSClass != v1.PodQOSBestEffort {
		t.Errorf("qosClass = %q, want BestEffort", got.Pod.Status.QOSClass)
	}
	rejected := testPod(v1.RestartPolicyAlways, containerSpec{name: "app"})
	rejected.UID = "rejected"
	rejected.Spec.Containers[0].Resources.Limits = resources("cpu", "1", "memory", "1Gi")
	root.Send(pid, &messages.PodRejected{Pod: rejected, Reason: "OutOfcpu", Message: "no"})
	got = waitFor(t, sink, rejected.UID, "rejected status", func(s v1.PodStatus) bool { return s.Phase == v1.PodFailed })
	if got.Pod.Status.QOSClass != v1.PodQOSGuaranteed {
		t.Errorf("rejected pod's qosClass = %q, want Guaranteed", got.Pod.Status.QOSClass)
	}
}
