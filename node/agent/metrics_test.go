package agent

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func statusPod(uid types.UID, phase v1.PodPhase, running, total int) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}, Status: v1.PodStatus{Phase: phase}}
	for i := 0; i < total; i++ {
		cs := v1.ContainerStatus{}
		if i < running {
			cs.State.Running = &v1.ContainerStateRunning{}
		} else {
			cs.State.Waiting = &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
		}
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, cs)
	}
	return p
}

// The running gauges follow status changes by difference.
func TestRunningGauges(t *testing.T) {
	m := newAgentMetrics()
	check := func(step string, pods, ctrs float64) {
		t.Helper()
		if got := testutil.ToFloat64(m.runningPods); got != pods {
			t.Errorf("%s: kubelet_running_pods = %v, want %v", step, got, pods)
		}
		if got := testutil.ToFloat64(m.runningCtrs); got != ctrs {
			t.Errorf("%s: kubelet_running_containers = %v, want %v", step, got, ctrs)
		}
	}
	m.observeStatus(statusPod("a", v1.PodRunning, 2, 2))
	m.observeStatus(statusPod("b", v1.PodRunning, 1, 1))
	check("two pods start", 2, 3)
	m.observeStatus(statusPod("a", v1.PodRunning, 1, 2)) // one container crashed
	check("a container of a crashed", 2, 2)
	m.observeStatus(statusPod("b", v1.PodSucceeded, 0, 1))
	check("b completed", 1, 1)
	m.forget("a")
	m.forget("b")
	check("both forgotten", 0, 0)
}
