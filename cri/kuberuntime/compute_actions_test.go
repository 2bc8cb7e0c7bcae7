package kuberuntime

import (
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
)

func readySandbox(attempt uint32, mode runtimeapi.NamespaceMode) *runtimeapi.PodSandboxStatus {
	return &runtimeapi.PodSandboxStatus{
		Id:       "sb",
		Metadata: &runtimeapi.PodSandboxMetadata{Attempt: attempt},
		State:    runtimeapi.PodSandboxState_SANDBOX_READY,
		Network:  &runtimeapi.PodSandboxNetworkStatus{Ip: "10.1.0.5"},
		Linux:    &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: &runtimeapi.NamespaceOption{Network: mode}}},
	}
}

func running(c *v1.Container) *cri.ContainerStatus {
	return &cri.ContainerStatus{ID: c.Name + "-id", Name: c.Name, State: cri.ContainerStateRunning, Hash: hashContainer(c)}
}

func exited(c *v1.Container, code int) *cri.ContainerStatus {
	return &cri.ContainerStatus{ID: c.Name + "-id", Name: c.Name, State: cri.ContainerStateExited, ExitCode: code, Hash: hashContainer(c), FinishedAt: time.Now()}
}

func TestComputePodActions(t *testing.T) {
	base := func(policy v1.RestartPolicy) *v1.Pod {
		p := newPod("p", "a", "b")
		p.Spec.RestartPolicy = policy
		return p
	}
	withInit := func() *v1.Pod {
		p := base(v1.RestartPolicyAlways)
		p.Spec.InitContainers = []v1.Container{{Name: "i1", Image: "x:1"}, {Name: "i2", Image: "x:1"}}
		return p
	}
	type want struct {
		killPod, createSandbox bool
		attempt                uint32
		nextInit               string
		start                  []int
		kill                   []string
	}
	tests := []struct {
		name   string
		pod    *v1.Pod
		status func(p *v1.Pod) *cri.PodStatus
		probes cri.Probes
		want   want
	}{
		{
			name:   "fresh pod",
			pod:    base(v1.RestartPolicyAlways),
			status: func(*v1.Pod) *cri.PodStatus { return &cri.PodStatus{} },
			want:   want{killPod: true, createSandbox: true, start: []int{0, 1}},
		},
		{
			name:   "fresh pod with init containers starts the first one only",
			pod:    withInit(),
			status: func(*v1.Pod) *cri.PodStatus { return &cri.PodStatus{} },
			want:   want{killPod: true, createSandbox: true, nextInit: "i1"},
		},
		{
			name: "steady state",
			pod:  base(v1.RestartPolicyAlways),
			status: func(p *v1.Pod) *cri.PodStatus {
				return &cri.PodStatus{SandboxStatuses: []*runtimeapi.PodSandboxStatus{readySandbox(0, runtimeapi.NamespaceMode_POD)},
					ContainerStatuses: []*cri.ContainerStatus{running(&p.Spec.Containers[0]), running(&p.Spec.Containers[1])}}
			},
			want: want{},
		},
		{
			name: "sandbox dead: new attempt, kill all",
			pod:  base(v1.RestartPolicyAlways),
			status: func(p *v1.Pod) *cri.PodStatus {
				sb := readySandbox(2, runtimeapi.NamespaceMode_POD)
				sb.State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
				return &cri.PodStatus{SandboxStatuses: []*runtimeapi.PodSandboxStatus{sb},
					ContainerStatuses: []*cri.ContainerStatus{running(&p.Spec.Containers[0])}}
			},
			want: want{killPod: true, createSandbox: true, attempt: 3, start: []int{0, 1}},
		},
		{
			name: "network mode changed",
			pod: func() *v1.Pod {
				p := base(v1.RestartPolicyAlways)
				p.Spec.HostNetwork = true
				return p
			}(),
			status: func(p *v1.Pod) *cri.PodStatus {
				return &cri.PodStatus{SandboxStatuses: []*runtimeapi.PodSandboxStatus{readySandbox(0, runtimeapi.NamespaceMode_POD)}}
			},
			want: want{killPod: true, createSandbox: true, attempt: 1, start: []int{0, 1}},
		},
		{
			name: "hash changed: kill and restart that container only",
			pod:  base(v1.RestartPolicyAlways),
			status: func(p *v1.Pod) *cri.PodStatus {
				old := running(&p.Spec.Containers[0])
				old.Hash++
				return &cri.PodStatus{SandboxStatuses: []*runtimeapi.PodSandboxStatus{readySandbox(0, runtimeapi.NamespaceMode_POD)},
					ContainerStatuses: []*cri.ContainerStatus{old, running(&p.Spec.Containers[1])}}
			},
			want: want{start: []int{0}, kill: []string{"a-id"}},
		},
		{
			name: "liveness failure",
			pod:  base(v1.RestartPolicyAlways),
			status: func(p *v1.Pod) *cri.PodStatus {
				return &cri.PodStatus{SandboxStatuses: []*runtimeapi.PodSandboxStatus{readySandbox(0, runtimeapi.NamespaceMode_POD)},
					ContainerStatuses: []*cri.ContainerStatus{running(&p.Spec.Containers[0]), running(&p.Spec.Containers[1])}}
			},
			probes: cri.Probes{"b-id": {Failed: true, Message: "probe failed"}},
			want:   want{start: []int{1}, kill: []string{"b-id"}},
		},
		{
			name: "liveness failure with Never kills without restart",
			pod:  base(v1.RestartPolicyNever),
			status: func(p *v1.Pod) *cri.PodStatus {
				return &cri.PodStatus{SandboxStatuses: []*runtimeapi.PodSandboxStatus{readySandbox(0, runtimeapi.NamespaceMode_POD)},
					ContainerStatuses: []*cri.ContainerStatus{running(&p.Spec.Containers[0]), running(&p.Spec.Containers[1])}}
			},
			probes: cri.Probes{"b-id": {Failed: true}},
			want:   want{kill: []string{"b-id"}},
		},
		{
			name: "init container running: wait",
			pod:  withInit(),
			status: func(p *v1.Pod) *cri.PodStatus {
				return &cri.PodStatus{SandboxStatuses: []*runtimeapi.PodSandboxStatus{readySandbox(0, runtimeapi.NamespaceMode_POD)},
					ContainerStatuses: []*cri.ContainerStatus{running(&p.Spec.InitContainers[0])}}
			},
			want: want{},
		},
		{
			name: "first init done: start the second",
			pod:  withInit(),
			status: func(p *v1.Pod) *cri.PodStatus {
				return &cri.PodStatus{SandboxStatuses: []*runtimeapi.PodSandboxStatus{readySandbox(0, runtimeapi.NamespaceMode_POD)},
					ContainerStatuses: []*cri.ContainerStatus{exited(&p.Spec.InitContainers[0], 0)}}
			},
			want: want{nextInit: "i2"},
		},
		{
			name: "failed init is retried under Always",
			pod:  withInit(),
			status: func(p *v1.Pod) *cri.PodStatus {
				return &cri.PodStatus{SandboxStatuses: []*runtimeapi.PodSandboxStatus{readySandbox(0, runtimeapi.NamespaceMode_POD)},
					ContainerStatuses: []*cri.ContainerStatus{exited(&p.Spec.InitContainers[1], 1), exited(&p.Spec.InitContainers[0], 0)}}
			},
			want: want{nextInit: "i2"},
		},
		{
			name: "all init done: start regular containers",
			pod:  withInit(),
			status: func(p *v1.Pod) *cri.PodStatus {
				return &cri.PodStatus{SandboxStatuses: []*runtimeapi.PodSandboxStatus{readySandbox(0, runtimeapi.NamespaceMode_POD)},
					ContainerStatuses: []*cri.ContainerStatus{exited(&p.Spec.InitContainers[1], 0), exited(&p.Spec.InitContainers[0], 0)}}
			},
			want: want{start: []int{0, 1}},
		},
		{
			name: "deleted pod starts nothing",
			pod: func() *v1.Pod {
				p := base(v1.RestartPolicyAlways)
				now := metav1.Now()
				p.DeletionTimestamp = &now
				return p
			}(),
			status: func(p *v1.Pod) *cri.PodStatus {
				return &cri.PodStatus{SandboxStatuses: []*runtimeapi.PodSandboxStatus{readySandbox(0, runtimeapi.NamespaceMode_POD)},
					ContainerStatuses: []*cri.ContainerStatus{exited(&p.Spec.Containers[0], 1), running(&p.Spec.Containers[1])}}
			},
			want: want{},
		},
	}
	// restartPolicy × exit code for a dead container next to a running one.
	for _, tc := range []struct {
		policy  v1.RestartPolicy
		code    int
		restart bool
	}{
		{v1.RestartPolicyAlways, 0, true}, {v1.RestartPolicyAlways, 1, true},
		{v1.RestartPolicyOnFailure, 0, false}, {v1.RestartPolicyOnFailure, 1, true},
		{v1.RestartPolicyNever, 0, false}, {v1.RestartPolicyNever, 1, false},
	} {
		w := want{}
		if tc.restart {
			w.start = []int{0}
		}
		tests = append(tests, struct {
			name   string
			pod    *v1.Pod
			status func(p *v1.Pod) *cri.PodStatus
			probes cri.Probes
			want   want
		}{
			name: string(tc.policy) + " exit " + string(rune('0'+tc.code)),
			pod:  base(tc.policy),
			status: func(p *v1.Pod) *cri.PodStatus {
				return &cri.PodStatus{SandboxStatuses: []*runtimeapi.PodSandboxStatus{readySandbox(0, runtimeapi.NamespaceMode_POD)},
					ContainerStatuses: []*cri.ContainerStatus{exited(&p.Spec.Containers[0], tc.code), running(&p.Spec.Containers[1])}}
			},
			want: w,
		})
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := computePodActions(tt.pod, tt.status(tt.pod), tt.probes)
			var names []string
			for _, i := range got.InitContainersToStart {
				names = append(names, tt.pod.Spec.InitContainers[i].Name)
			}
			next := strings.Join(names, ",")
			var kill []string
			for id := range got.ContainersToKill {
				kill = append(kill, id)
			}
			sort.Strings(kill)
			g := want{killPod: got.KillPod, createSandbox: got.CreateSandbox, attempt: got.Attempt, nextInit: next, start: got.ContainersToStart, kill: kill}
			if !reflect.DeepEqual(g, tt.want) {
				t.Errorf("actions = %+v\nwant      %+v", g, tt.want)
			}
		})
	}
}

func TestComputePodActionsAllExitedNeverKillsPod(t *testing.T) {
	p := newPod("p", "a")
	p.Spec.RestartPolicy = v1.RestartPolicyNever
	st := &cri.PodStatus{SandboxStatuses: []*runtimeapi.PodSandboxStatus{readySandbox(0, runtimeapi.NamespaceMode_POD)},
		ContainerStatuses: []*cri.ContainerStatus{exited(&p.Spec.Containers[0], 0)}}
	got := computePodActions(p, st, nil)
	if !got.KillPod || got.CreateSandbox || len(got.ContainersToStart) != 0 {
		t.Errorf("actions = %s, want KillPod only", got)
	}
	// Once its sandbox is gone, a Never pod that ran is not started again.
	st.SandboxStatuses[0].State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	got = computePodActions(p, st, nil)
	if got.CreateSandbox {
		t.Errorf("actions = %s: recreated the sandbox of a finished Never pod", got)
	}
}
