package kuberuntime

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/actorlet/actorlet/test/testutil"
)

// TestIntegrationDownwardAPIVolume: a downwardAPI volume is written before
// the container starts, mounted from the atomic writer's directory, and a
// label change reaches it on the next sync.
func TestIntegrationDownwardAPIVolume(t *testing.T) {
	e := newProcEnv(t)
	pod := shPod("info", map[string]string{"app": "exec sleep 300"}, "app")
	pod.Labels = map[string]string{"app": "info", "version": "1"}
	pod.Spec.Volumes = []v1.Volume{{Name: "podinfo", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{
		Items: []v1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
			{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}},
		}}}}}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "podinfo", MountPath: "/etc/podinfo"}}
	e.syncUntil(t, pod, func(s v1.PodStatus) error {
		if s.Phase != v1.PodRunning {
			return fmt.Errorf("phase %s", s.Phase)
		}
		return nil
	})
	dir := e.m.projectedPath(pod, "podinfo")
	if got := testutil.ReadFile(t, filepath.Join(dir, "labels")); got != "app=\"info\"\nversion=\"1\"" {
		t.Errorf("labels = %q", got)
	}
	if got := testutil.ReadFile(t, filepath.Join(dir, "name")); got != "info" {
		t.Errorf("name = %q", got)
	}
	st, _ := e.status(t, pod)
	resp, err := e.m.rt.ContainerStatus(t.Context(), st.ContainerStatuses[0].ID, false)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mt := range resp.GetStatus().GetMounts() {
		found = found || mt.GetContainerPath() == "/etc/podinfo"
	}
	if !found {
		t.Errorf("mounts %v: no /etc/podinfo", resp.GetStatus().GetMounts())
	}

	pod.Labels["version"] = "2"
	e.sync(t, pod)
	if got := testutil.ReadFile(t, filepath.Join(dir, "labels")); got != "app=\"info\"\nversion=\"2\"" {
		t.Errorf("labels after the change = %q", got)
	}
}

func TestEnvResourceFieldRef(t *testing.T) {
	pod := newPod("p", "app")
	pod.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceMemory: resourceMust("128Mi")}
	pod.Spec.Containers[0].Env = []v1.EnvVar{
		{Name: "MEM_REQ", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "requests.memory", Divisor: resourceMust("1Mi")}}},
		{Name: "CPU_LIMIT", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}}},
	}
	env, err := containerEnv(pod, &pod.Spec.Containers[0], podFieldValues{container: "app", allocatable: v1.ResourceList{v1.ResourceCPU: resourceMust("2")}}, newEnvBudget())
	if err != nil {
		t.Fatal(err)
	}
	if m := envMap(env); m["MEM_REQ"] != "128" || m["CPU_LIMIT"] != "2" {
		t.Errorf("env = %v", m)
	}
}

func resourceMust(s string) resource.Quantity { return resource.MustParse(s) }

// fsGroup and supplementalGroups reach the container's process (fsGroup
// first), and the volumes the agent manages are the fsGroup's: emptyDir
// group-writable and setgid, projected files group-readable.
func TestIntegrationFSGroupAndSupplementalGroups(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("setting groups and volume ownership needs root")
	}
	e := newProcEnv(t)
	out := t.TempDir()
	pod := shPod("groups", map[string]string{"app": "id -G > " + out + "/groups; exec sleep 300"}, "app")
	fsGroup, ownerOnly := int64(2000), int32(0o400)
	pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: &fsGroup, SupplementalGroups: []int64{3000, 3001}}
	pod.Spec.Volumes = []v1.Volume{
		{Name: "out", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: out}}},
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "podinfo", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{DefaultMode: &ownerOnly,
			Items: []v1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
	}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "out", MountPath: out}, {Name: "scratch", MountPath: "/scratch"}, {Name: "podinfo", MountPath: "/etc/podinfo"}}
	e.syncUntilRunning(t, pod)
	testutil.Eventually(t, 10*time.Second, func() error {
		b, err := os.ReadFile(filepath.Join(out, "groups"))
		if err != nil || len(b) == 0 {
			return fmt.Errorf("groups not written yet: %v", err)
		}
		if got := strings.Fields(string(b)); !slices.Equal(got, []string{"0", "2000", "3000", "3001"}) {
			t.Fatalf("id -G = %q, want 0 2000 3000 3001", b)
		}
		return nil
	})
	for p, want := range map[string]fs.FileMode{ // bits that must be set
		e.m.emptyDirPath(pod, "scratch"):                         fs.ModeDir | fs.ModeSetgid | 0o070,
		filepath.Join(e.m.projectedPath(pod, "podinfo"), "name"): 0o040,
	} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if gid := info.Sys().(*syscall.Stat_t).Gid; gid != 2000 || info.Mode()&want != want {
			t.Errorf("%s: mode %v gid %d, want %v set and gid 2000", p, info.Mode(), gid, want)
		}
	}
	// The group bits are part of what is written: later syncs find the
	// volume unchanged and do not write it again.
	before, err := os.Readlink(filepath.Join(e.m.projectedPath(pod, "podinfo"), "..data"))
	if err != nil {
		t.Fatal(err)
	}
	e.sync(t, pod)
	e.sync(t, pod)
	if after, _ := os.Readlink(filepath.Join(e.m.projectedPath(pod, "podinfo"), "..data")); after != before {
		t.Errorf("the unchanged volume was written again: ..data %s, then %s", before, after)
	}
}
