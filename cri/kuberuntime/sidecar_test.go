package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/test/testutil"
)

var always = v1.ContainerRestartPolicyAlways

// sidecarPod: initContainers [logger (sidecar), setup, proxy (sidecar)],
// containers [app].
func sidecarPod(policy v1.RestartPolicy) *v1.Pod {
	p := newPod("sc", "app")
	p.Spec.RestartPolicy = policy
	p.Spec.InitContainers = []v1.Container{
		{Name: "logger", Image: "x:1", RestartPolicy: &always},
		{Name: "setup", Image: "x:1"},
		{Name: "proxy", Image: "x:1", RestartPolicy: &always},
	}
	return p
}

func withStatuses(cs ...*cri.ContainerStatus) *cri.PodStatus {
	return &cri.PodStatus{SandboxStatuses: []*runtimeapi.PodSandboxStatus{readySandbox(0, runtimeapi.NamespaceMode_POD)}, ContainerStatuses: cs}
}

func initNames(p *v1.Pod, a podActions) []string {
	var out []string
	for _, i := range a.InitContainersToStart {
		out = append(out, p.Spec.InitContainers[i].Name)
	}
	return out
}

func TestComputeSidecarActions(t *testing.T) {
	type want struct {
		killPod bool
		init    []string
		start   []int
		kill    []string
	}
	p := sidecarPod(v1.RestartPolicyNever)
	logger, setup, proxy := &p.Spec.InitContainers[0], &p.Spec.InitContainers[1], &p.Spec.InitContainers[2]
	app := &p.Spec.Containers[0]
	withProbe := sidecarPod(v1.RestartPolicyNever)
	withProbe.Spec.InitContainers[2].StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
	changed := sidecarPod(v1.RestartPolicyNever)
	changed.Spec.InitContainers[0].Image = "x:2"

	tests := []struct {
		name   string
		pod    *v1.Pod
		status *cri.PodStatus
		probes cri.Probes
		want   want
	}{
		{"nothing ran: the first sidecar starts", p, withStatuses(), nil, want{init: []string{"logger"}}},
		{"a running sidecar lets the next init container start", p, withStatuses(running(logger)), nil, want{init: []string{"setup"}}},
		{"a running init container is waited for", p, withStatuses(running(logger), running(setup)), nil, want{}},
		{"after the init container, the next sidecar", p, withStatuses(running(logger), exited(setup, 0)), nil, want{init: []string{"proxy"}}},
		{"all sidecars running: the app starts", p, withStatuses(running(logger), exited(setup, 0), running(proxy)), nil, want{start: []int{0}}},
		{"a startup probe not yet succeeded holds the app back", withProbe, withStatuses(running(logger), exited(setup, 0), running(proxy)), nil, want{}},
		{"startup probe succeeded: the app starts", withProbe, withStatuses(running(logger), exited(setup, 0), running(proxy)),
			cri.Probes{"proxy-id": {Started: true}}, want{start: []int{0}}},
		{"a failed startup probe restarts the sidecar", withProbe, withStatuses(running(logger), exited(setup, 0), running(proxy)),
			cri.Probes{"proxy-id": {Failed: true, Message: "boom"}}, want{init: []string{"proxy"}, kill: []string{"proxy-id"}}},
		{"an exited sidecar restarts in a Never pod, the app keeps running", p,
			withStatuses(exited(logger, 1), running(proxy), running(app)), nil, want{init: []string{"logger"}}},
		{"a sidecar whose instance is gone is started again", p,
			withStatuses(running(proxy), running(app)), nil, want{init: []string{"logger"}}},
		{"a sidecar failing liveness is restarted", p, withStatuses(running(logger), exited(setup, 0), running(proxy), running(app)),
			cri.Probes{"logger-id": {Failed: true}}, want{init: []string{"logger"}, kill: []string{"logger-id"}}},
		{"a changed sidecar is restarted", changed, withStatuses(running(logger), exited(setup, 0), running(proxy), running(app)),
			nil, want{init: []string{"logger"}, kill: []string{"logger-id"}}},
		{"the app done in a Never pod: the pod stops, sidecars are not restarted", p,
			withStatuses(exited(logger, 137), exited(setup, 0), running(proxy), exited(app, 0)), nil, want{killPod: true}},
		{"a failed init container in a Never pod fails the pod", p, withStatuses(running(logger), exited(setup, 1)), nil, want{killPod: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := computePodActions(tt.pod, tt.status, tt.probes)
			var kill []string
			for id := range got.ContainersToKill {
				kill = append(kill, id)
			}
			g := want{killPod: got.KillPod, init: initNames(tt.pod, got), start: got.ContainersToStart, kill: kill}
			if !reflect.DeepEqual(g, tt.want) {
				t.Errorf("actions = %+v\nwant      %+v", g, tt.want)
			}
		})
	}
}

// TestIntegrationSidecarOrder runs a pod with two sidecars and an init
// container on the process runtime: they start in spec order, the app
// waits for the proxy's startup probe, and on kill the app stops first,
// then the sidecars in reverse order.
func TestIntegrationSidecarOrder(t *testing.T) {
	e := newProcEnv(t)
	trace := filepath.Join(t.TempDir(), "trace")
	loop := func(name string) []string {
		return []string{"/bin/sh", "-c", fmt.Sprintf("trap 'echo %[1]s stop >> %[2]s; exit 0' TERM; echo %[1]s start >> %[2]s; while true; do sleep 0.05; done", name, trace)}
	}
	pod := newPod("sidecars")
	pod.Spec.RestartPolicy = v1.RestartPolicyAlways
	pod.Spec.InitContainers = []v1.Container{
		{Name: "logger", Image: "local/sh:1", Command: loop("logger"), RestartPolicy: &always},
		{Name: "setup", Image: "local/sh:1", Command: []string{"/bin/sh", "-c", "echo setup >> " + trace}},
		{Name: "proxy", Image: "local/sh:1", Command: loop("proxy"), RestartPolicy: &always,
			StartupProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}},
	}
	pod.Spec.Containers = []v1.Container{{Name: "app", Image: "local/sh:1", Command: loop("app")}}
	lines := func() []string {
		b, _ := os.ReadFile(trace)
		return strings.Fields(strings.ReplaceAll(string(b), " ", "_"))
	}

	// Up to the proxy: running, but its startup probe has not succeeded.
	testutil.Eventually(t, 15*time.Second, func() error {
		e.sync(t, pod)
		if l := lines(); !reflect.DeepEqual(l, []string{"logger_start", "setup", "proxy_start"}) {
			return fmt.Errorf("trace %v", l)
		}
		return nil
	})
	for range 3 {
		e.sync(t, pod)
	}
	st, api := e.status(t, pod)
	if l := lines(); len(l) != 3 {
		t.Fatalf("app started before the proxy's startup probe succeeded: %v", l)
	}
	if api.Phase != v1.PodPending {
		t.Errorf("phase before the app started = %s, want Pending", api.Phase)
	}
	proxy := st.FindContainerStatusByName("proxy")
	testutil.Eventually(t, 15*time.Second, func() error {
		st, _ := e.status(t, pod)
		e.m.SyncPod(context.Background(), pod, st, cri.Probes{proxy.ID: {Started: true}})
		if l := lines(); len(l) != 4 || l[3] != "app_start" {
			return fmt.Errorf("trace %v", l)
		}
		return nil
	})
	_, api = e.status(t, pod)
	if api.Phase != v1.PodRunning {
		t.Errorf("phase = %s, want Running", api.Phase)
	}

	st, _ = e.status(t, pod)
	if err := e.m.KillPod(context.Background(), pod, runningPod(pod, st), nil); err != nil {
		t.Fatalf("KillPod: %v", err)
	}
	want := []string{"logger_start", "setup", "proxy_start", "app_start", "app_stop", "proxy_stop", "logger_stop"}
	if l := lines(); !reflect.DeepEqual(l, want) {
		t.Errorf("trace = %v\nwant    %v", l, want)
	}
}

// TestIntegrationSidecarJobSucceeds: a Never pod whose app exits 0 while a
// sidecar runs is stopped (the sidecar with it) and ends Succeeded,
// whatever the sidecar's exit code.
func TestIntegrationSidecarJobSucceeds(t *testing.T) {
	e := newProcEnv(t)
	pod := newPod("job")
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	pod.Spec.InitContainers = []v1.Container{{Name: "shipper", Image: "local/sh:1", RestartPolicy: &always,
		Command: []string{"/bin/sh", "-c", "trap 'exit 3' TERM; while true; do sleep 0.05; done"}}}
	pod.Spec.Containers = []v1.Container{{Name: "job", Image: "local/sh:1", Command: []string{"/bin/sh", "-c", "sleep 0.2"}}}
	api := e.syncUntil(t, pod, func(s v1.PodStatus) error {
		if s.Phase != v1.PodSucceeded {
			return fmt.Errorf("phase %s, init %+v", s.Phase, s.InitContainerStatuses)
		}
		return nil
	})
	if cs := api.InitContainerStatuses[0]; cs.State.Terminated == nil {
		t.Errorf("sidecar state = %+v, want terminated", cs.State)
	}
	if cs := api.ContainerStatuses[0]; cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
		t.Errorf("job state = %+v, want exit 0", cs.State)
	}
}

// A failed probe's own terminationGracePeriodSeconds is the kill's grace
// (at least the 2 s minimum); without it, or while the pod is being
// deleted, the pod's grace applies.
func TestProbeTerminationGracePeriod(t *testing.T) {
	g := func(v int64) *int64 { return &v }
	exec := v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}
	p := newPod("p", "app")
	p.Spec.TerminationGracePeriodSeconds = g(60)
	c := &p.Spec.Containers[0]
	c.LivenessProbe = &v1.Probe{ProbeHandler: exec, TerminationGracePeriodSeconds: g(5)}
	c.StartupProbe = &v1.Probe{ProbeHandler: exec, TerminationGracePeriodSeconds: g(1)}
	st := withStatuses(running(c))
	grace := func(pod *v1.Pod, probes cri.Probes) *int64 {
		return computePodActions(pod, st, probes).ContainersToKill["app-id"].grace
	}
	if got := grace(p, cri.Probes{"app-id": {Failed: true}}); got == nil || *got != 5 {
		t.Errorf("liveness failure grace = %v, want 5", got)
	}
	if got := grace(p, cri.Probes{"app-id": {Failed: true, Startup: true}}); got == nil || *got != minimumGracePeriod {
		t.Errorf("startup failure grace = %v, want the minimum %d", got, minimumGracePeriod)
	}
	c.LivenessProbe.TerminationGracePeriodSeconds = nil
	if got := grace(p, cri.Probes{"app-id": {Failed: true}}); got != nil {
		t.Errorf("no probe grace: %v, want the pod's", *got)
	}
	c.LivenessProbe.TerminationGracePeriodSeconds = g(5)
	p.DeletionGracePeriodSeconds = g(10)
	if got := grace(p, cri.Probes{"app-id": {Failed: true}}); got != nil {
		t.Errorf("deleting pod: %v, want the deletion grace", *got)
	}
}

// An ephemeral container added to a running pod starts once, beside the
// running containers (which are not restarted), reports its status, and is
// not started again after it exits.
func TestIntegrationEphemeralContainer(t *testing.T) {
	e := newProcEnv(t)
	pod := newPod("dbg")
	pod.Spec.Containers = []v1.Container{{Name: "app", Image: "local/sh:1", Command: []string{"/bin/sh", "-c", "exec sleep 300"}}}
	before := e.syncUntil(t, pod, func(s v1.PodStatus) error {
		if s.Phase != v1.PodRunning {
			return fmt.Errorf("phase %s", s.Phase)
		}
		return nil
	})
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{
		Name: "debugger", Image: "local/sh:1", Command: []string{"/bin/sh", "-c", "echo debugging"}}}}
	after := e.syncUntil(t, pod, func(s v1.PodStatus) error {
		if len(s.EphemeralContainerStatuses) != 1 || s.EphemeralContainerStatuses[0].State.Terminated == nil {
			return fmt.Errorf("ephemeral statuses %+v", s.EphemeralContainerStatuses)
		}
		return nil
	})
	if after.ContainerStatuses[0].ContainerID != before.ContainerStatuses[0].ContainerID {
		t.Error("adding a debug container restarted the app")
	}
	for range 3 {
		e.sync(t, pod)
	}
	st, _ := e.status(t, pod)
	n := 0
	for _, cs := range st.ContainerStatuses {
		if cs.Name == "debugger" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("debug container instances = %d, want 1 (never restarted)", n)
	}
}

// A node that refuses exec (--allow-exec=false) refuses debug containers
// too: an ephemeral container runs the operator's command in the pod as
// exec does. It never runs; its status waits with reason Forbidden and the
// 403 message exec gets, and one Warning event says so.
func TestIntegrationEphemeralContainerDeniedWithExec(t *testing.T) {
	e := newProcEnv(t, func(o *Options) { o.DenyEphemeralContainers = true })
	marker := filepath.Join(t.TempDir(), "ran")
	pod := newPod("dbg")
	pod.Spec.Containers = []v1.Container{{Name: "app", Image: "local/sh:1", Command: []string{"/bin/sh", "-c", "exec sleep 300"}}}
	e.syncUntil(t, pod, func(s v1.PodStatus) error {
		if s.Phase != v1.PodRunning {
			return fmt.Errorf("phase %s", s.Phase)
		}
		return nil
	})
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{
		Name: "debugger", Image: "local/sh:1", Command: []string{"/bin/sh", "-c", "touch " + marker}}}}
	for range 3 {
		res := e.sync(t, pod)
		if err := res.Error(); err == nil || !errors.Is(err, ErrForbidden) {
			t.Fatalf("sync error = %v, want Forbidden", err)
		}
	}
	st, api := e.status(t, pod)
	for _, cs := range st.ContainerStatuses {
		if cs.Name == "debugger" {
			t.Fatalf("the debug container was created: %+v", cs)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the debug container's command ran")
	}
	want := "forbidden: debug (ephemeral container debugger) is disabled on this node (--allow-exec=false)"
	if len(api.EphemeralContainerStatuses) != 1 || api.EphemeralContainerStatuses[0].State.Waiting == nil ||
		api.EphemeralContainerStatuses[0].State.Waiting.Reason != "Forbidden" || api.EphemeralContainerStatuses[0].State.Waiting.Message != want {
		t.Fatalf("ephemeral statuses = %+v, want waiting Forbidden %q", api.EphemeralContainerStatuses, want)
	}
	n := 0
	for _, ev := range e.rec.Events() {
		if ev.Type == v1.EventTypeWarning && strings.Contains(ev.Message, want) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("Warning events naming the refusal = %d, want 1: %v", n, e.rec.Lines())
	}
}
