package supervisor

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestAdmitRejectsEachReason(t *testing.T) {
	n := node{labels: map[string]string{"zone": "a"}, maxPods: 3, allocatable: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi")}}
	running := []*v1.Pod{withHostPort(withRequests(newPod("r1", "r1", 1), "1500m", "512Mi"), 8080)}
	selector := withNodeSelector(newPod("p", "p", 1), map[string]string{"zone": "b"})
	initHeavy := newPod("p", "p", 1)
	initHeavy.Spec.InitContainers = []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}}}
	limitsOnly := newPod("p", "p", 1)
	limitsOnly.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse("600Mi")}
	cases := []struct {
		name   string
		pod    *v1.Pod
		active []*v1.Pod
		want   string
	}{
		{"fits", withRequests(newPod("p", "p", 1), "500m", "256Mi"), running, ""},
		{"cpu", withRequests(newPod("p", "p", 1), "600m", "1Mi"), running, "OutOfcpu"},
		{"memory", withRequests(newPod("p", "p", 1), "100m", "600Mi"), running, "OutOfmemory"},
		{"init container counts", initHeavy, running, "OutOfcpu"},
		{"limits only count as requests", limitsOnly, running, "OutOfmemory"},
		{"pods", newPod("p", "p", 1), []*v1.Pod{newPod("a", "a", 1), newPod("b", "b", 1), newPod("c", "c", 1)}, ReasonOutOfPods},
		{"host port taken", withHostPort(newPod("p", "p", 1), 8080), running, ReasonNodePorts},
		{"other host port free", withHostPort(newPod("p", "p", 1), 8081), running, ""},
		{"node selector", selector, nil, ReasonNodeAffinity},
		{"same port on another address", bind(newPod("p", "p", 1), "10.0.0.2", "TCP", 9000), []*v1.Pod{bind(newPod("a", "a", 1), "10.0.0.1", "TCP", 9000)}, ""},
		{"same port, same address", bind(newPod("p", "p", 1), "10.0.0.1", "TCP", 9000), []*v1.Pod{bind(newPod("a", "a", 1), "10.0.0.1", "TCP", 9000)}, ReasonNodePorts},
		{"every address vs one address", bind(newPod("p", "p", 1), "", "TCP", 9000), []*v1.Pod{bind(newPod("a", "a", 1), "10.0.0.1", "TCP", 9000)}, ReasonNodePorts},
		{"one address vs every address", bind(newPod("p", "p", 1), "10.0.0.1", "TCP", 9000), []*v1.Pod{bind(newPod("a", "a", 1), "", "TCP", 9000)}, ReasonNodePorts},
		{"same port, other protocol", bind(newPod("p", "p", 1), "", "UDP", 9000), []*v1.Pod{bind(newPod("a", "a", 1), "", "TCP", 9000)}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := admit(n, tc.pod, newUsage(tc.active))
			switch {
			case tc.want == "" && r != nil:
				t.Fatalf("rejected: %+v", r)
			case tc.want != "" && (r == nil || r.Reason != tc.want || r.Message == ""):
				t.Fatalf("admit = %+v, want reason %s with a message", r, tc.want)
			}
		})
	}
}

func TestAdmitAsksTheRuntimeLast(t *testing.T) {
	asked := 0
	n := node{labels: map[string]string{"zone": "a"}, maxPods: 1, runtime: func(p *v1.Pod) (string, string) {
		asked++
		if len(p.Spec.Containers[0].Command) == 0 {
			return "RuntimeUnsupported", "spec.containers[0].command: Required value"
		}
		return "", ""
	}}
	if r := admit(n, newPod("p", "p", 1), newUsage(nil)); r == nil || r.Reason != "RuntimeUnsupported" || !strings.Contains(r.Message, "command") {
		t.Fatalf("admit = %+v, want the runtime's refusal", r)
	}
	ok := newPod("p", "p", 1)
	ok.Spec.Containers[0].Command = []string{"sh"}
	if r := admit(n, ok, newUsage(nil)); r != nil {
		t.Fatalf("admit = %+v, want admitted", r)
	}
	full := newUsage([]*v1.Pod{newPod("a", "a", 1)})
	if r := admit(n, newPod("p", "p", 1), full); r == nil || r.Reason != ReasonOutOfPods || asked != 2 {
		t.Fatalf("admit = %+v after %d runtime checks, want OutOfpods without asking the runtime", r, asked)
	}
}

func TestConfigValidateNamesTheField(t *testing.T) {
	if err := (Config{}).Validate(); err == nil || !strings.Contains(err.Error(), "Runtime") {
		t.Fatalf("Validate() = %v, want an error naming Runtime", err)
	}
}

func TestKlogMessagesAreCapitalisedWithoutPeriod(t *testing.T) {
	for in, want := range map[string]string{"actor restarted.": "Actor restarted", "": "Actor system event", "Started": "Started"} {
		if got := capitalise(in); got != want {
			t.Fatalf("capitalise(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRestartBackoffIsExponentialAndCapped(t *testing.T) {
	s := &restartStrategy{backoff: 100e6, maxBackoff: 1e9}
	want := []int64{100e6, 200e6, 400e6, 800e6, 1e9, 1e9}
	for i, w := range want {
		if got := s.delay(i + 1); int64(got) != w {
			t.Fatalf("delay(%d) = %v, want %v", i+1, got, w)
		}
	}
}

func bind(p *v1.Pod, ip, proto string, port int32) *v1.Pod {
	p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: port, HostIP: ip, Protocol: v1.Protocol(proto)}}
	return p
}

// The usage kept incrementally as pods are admitted equals the one rebuilt
// from the active pods.
func TestUsageIncrementalEqualsRebuilt(t *testing.T) {
	var pods []*v1.Pod
	u := newUsage(nil)
	for i, req := range []string{"100m", "250m", "1", "1500m"} {
		p := bind(withRequests(newPod("p", "p", int64(i)), req, "64Mi"), "", "TCP", int32(8000+i))
		pods = append(pods, p)
		u.add(p)
	}
	rebuilt := newUsage(pods)
	if u.pods != rebuilt.pods || len(u.ports) != len(rebuilt.ports) || len(u.bound) != len(rebuilt.bound) {
		t.Fatalf("incremental %+v != rebuilt %+v", u, rebuilt)
	}
	for name, q := range rebuilt.used {
		if got := u.used[name]; got.Cmp(q) != 0 {
			t.Fatalf("%s: incremental %s, rebuilt %s", name, got.String(), q.String())
		}
	}
}

// Under memory pressure best-effort pods are refused with the kubelet's
// reason and message, others admitted; under disk pressure every pod.
func TestAdmitUnderPressure(t *testing.T) {
	mem := node{maxPods: 10, pressure: []v1.NodeConditionType{v1.NodeMemoryPressure}}
	if r := admit(mem, newPod("be", "be", 1), newUsage(nil)); r == nil || r.Reason != "Evicted" || r.Message != "The node had condition: [MemoryPressure]. " {
		t.Errorf("best effort under memory pressure: %+v", r)
	}
	if r := admit(mem, withRequests(newPod("bu", "bu", 1), "100m", "10Mi"), newUsage(nil)); r != nil {
		t.Errorf("burstable under memory pressure refused: %+v", r)
	}
	disk := node{maxPods: 10, pressure: []v1.NodeConditionType{v1.NodeDiskPressure}}
	if r := admit(disk, withRequests(newPod("bu", "bu", 1), "100m", "10Mi"), newUsage(nil)); r == nil || r.Message != "The node had condition: [DiskPressure]. " {
		t.Errorf("burstable under disk pressure: %+v", r)
	}
}
