package memcri

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/cri/kuberuntime"
)

func sandboxConfig(uid string) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "p-" + uid, Namespace: "ns", Uid: uid},
		Labels:   map[string]string{kuberuntime.LabelPodUID: uid, kuberuntime.LabelNode: "n1"},
	}
}

func TestMemRuntimeLifecycle(t *testing.T) {
	ctx := context.Background()
	r := New()
	sc := sandboxConfig("u1")
	sb, err := r.RunPodSandbox(ctx, sc, "")
	if err != nil {
		t.Fatal(err)
	}
	cc := &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: "img"},
		Labels: map[string]string{kuberuntime.LabelPodUID: "u1", kuberuntime.LabelNode: "n1"}}
	id, err := r.CreateContainer(ctx, sb, cc, sc)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := r.StartContainer(ctx, id); err == nil {
		t.Error("starting a running container: want an error")
	}
	if ready, running := r.Counts(); ready != 1 || running != 1 {
		t.Errorf("counts = %d ready, %d running; want 1, 1", ready, running)
	}
	st, err := r.ContainerStatus(ctx, id, false)
	if err != nil || st.Status.State != runtimeapi.ContainerState_CONTAINER_RUNNING || st.Status.StartedAt == 0 {
		t.Fatalf("status = %v, %v; want running with a start time", st, err)
	}
	if err := r.StopPodSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	st, _ = r.ContainerStatus(ctx, id, false)
	if st.Status.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.Status.ExitCode != 137 || st.Status.FinishedAt == 0 {
		t.Errorf("after stopping the sandbox: %v; want exited 137 with a finish time", st.Status)
	}
	if err := r.RemovePodSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ContainerStatus(ctx, id, false); !cri.IsNotFound(err) {
		t.Errorf("container after its sandbox was removed: err = %v; want NotFound", err)
	}
	if len(r.byPod) != 0 {
		t.Errorf("index keeps %d pods after removal; want none", len(r.byPod))
	}
	if err := r.GetContainerEvents(ctx, nil, nil); !cri.IsUnimplemented(err) {
		t.Errorf("GetContainerEvents: err = %v; want Unimplemented (the PLEG relists)", err)
	}
}

func TestMemRuntimeListFilters(t *testing.T) {
	ctx := context.Background()
	r := New()
	ids := map[string]string{}
	for _, uid := range []string{"a", "b", "c"} {
		sc := sandboxConfig(uid)
		sb, err := r.RunPodSandbox(ctx, sc, "")
		if err != nil {
			t.Fatal(err)
		}
		cid, err := r.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Labels: sc.Labels}, sc)
		if err != nil {
			t.Fatal(err)
		}
		ids[uid] = cid
	}
	if err := r.StartContainer(ctx, ids["b"]); err != nil {
		t.Fatal(err)
	}
	running := &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}
	tests := []struct {
		name   string
		filter *runtimeapi.ContainerFilter
		want   int
	}{
		{"all", &runtimeapi.ContainerFilter{}, 3},
		{"nil filter", nil, 3},
		{"by pod UID (indexed)", &runtimeapi.ContainerFilter{LabelSelector: map[string]string{kuberuntime.LabelPodUID: "a"}}, 1},
		{"unknown pod UID", &runtimeapi.ContainerFilter{LabelSelector: map[string]string{kuberuntime.LabelPodUID: "zz"}}, 0},
		{"by node label", &runtimeapi.ContainerFilter{LabelSelector: map[string]string{kuberuntime.LabelNode: "n1"}}, 3},
		{"other node", &runtimeapi.ContainerFilter{LabelSelector: map[string]string{kuberuntime.LabelNode: "n2"}}, 0},
		{"running", &runtimeapi.ContainerFilter{State: running}, 1},
		{"by id", &runtimeapi.ContainerFilter{Id: ids["c"]}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.ListContainers(ctx, tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.want {
				t.Errorf("got %d containers, want %d", len(got), tt.want)
			}
		})
	}
	sbs, err := r.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{kuberuntime.LabelPodUID: "c"}})
	if err != nil || len(sbs) != 1 {
		t.Errorf("sandboxes of pod c: %d, %v; want 1", len(sbs), err)
	}
}

// The in-memory runtime is driven by the real runtime manager in the
// benchmarks and fleet tests: a pod synced through it must come out running.
func TestMemRuntimeUnderManager(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := New()
	m := kuberuntime.NewManager(r, kuberuntime.Options{NodeName: "n1", PodLogsDir: t.TempDir(), PodsDir: t.TempDir()})
	grace := int64(1)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p0", Namespace: "bench", UID: "uid-p0"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			RestartPolicy:                 v1.RestartPolicyAlways,
			Containers: []v1.Container{{
				Name: "c", Image: "bench/sleep:1", Command: []string{"sleep", "3600"}, ImagePullPolicy: v1.PullIfNotPresent,
			}},
		},
	}
	pod.Spec.EnableServiceLinks = ptr.To(false)
	status, err := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	if res := m.SyncPod(ctx, pod, status, nil); res.Error() != nil {
		t.Fatalf("SyncPod: %v", res.Error())
	}
	if _, running := r.Counts(); running != 1 {
		t.Fatalf("running containers = %d, want 1", running)
	}
	pods, err := m.GetPods(ctx, false)
	if err != nil || len(pods) != 1 || pods[0].ID != pod.UID {
		t.Fatalf("GetPods = %v, %v; want the one pod", pods, err)
	}
}
