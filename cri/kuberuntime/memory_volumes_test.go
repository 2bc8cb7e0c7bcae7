package kuberuntime

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/actorlet/actorlet/test/testutil"
)

// TestMemoryEmptyDir: a medium Memory emptyDir is a tmpfs of its sizeLimit
// from the first sync (before the sandbox), its containers mount it, and
// the pod's cleanup unmounts it; another medium is refused by name.
func TestMemoryEmptyDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	e := newEnv(t)
	pod := newPod("mem", "app")
	size := resource.MustParse("8Mi")
	pod.Spec.Volumes = []v1.Volume{{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: &size}}}}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "cache", MountPath: "/cache"}}
	e.sync(t, pod, nil)
	dir := e.m.emptyDirPath(pod, "cache")
	mounts := testutil.MountsUnder(t, dir)
	if len(mounts) != 1 || !strings.Contains(mounts[0], "tmpfs") || !strings.Contains(mounts[0], "size=8192k") {
		t.Fatalf("mounts at %s: %q, want one 8Mi tmpfs", dir, mounts)
	}
	if err := e.m.CleanupPod(t.Context(), pod.UID); err != nil {
		t.Fatal(err)
	}
	if left := testutil.MountsUnder(t, filepath.Dir(dir)); len(left) > 0 {
		t.Errorf("mounts left after CleanupPod: %q", left)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("emptyDir directory after CleanupPod: %v", err)
	}

	huge := newPod("huge", "app")
	huge.Spec.Volumes = []v1.Volume{{Name: "pages", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumHugePages}}}}
	huge.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "pages", MountPath: "/pages"}}
	if _, err := e.m.containerMounts(huge, &huge.Spec.Containers[0]); err == nil || !strings.Contains(err.Error(), `medium "HugePages" is not supported`) {
		t.Errorf("a HugePages emptyDir: %v", err)
	}
}
