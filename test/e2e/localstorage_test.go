//go:build e2e

package e2e

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// podFailed is a waitPod condition: the pod ended Failed.
func podFailed(p *v1.Pod) error {
	if p.Status.Phase != v1.PodFailed {
		return fmt.Errorf("phase %s", p.Status.Phase)
	}
	return nil
}

// Scenario: local-storage eviction on containerd. A pod writing 4Mi into
// an emptyDir limited to 1Mi is evicted with the kubelet's message; a pod
// writing 4Mi into its container's writable layer (containerd's snapshot,
// through CRI ListContainerStats) past its 2Mi ephemeral-storage limit is
// evicted for its total; a pod under its emptyDir's limit keeps running.
func TestLocalStorageEvictionOnContainerd(t *testing.T) {
	a := startAgent(t, agentOptions{args: []string{"--eviction-monitoring-interval", "500ms"}})
	scratch := func(name, limit, script string) *v1.Pod {
		p := shPod(name, script)
		q := resource.MustParse(limit)
		p.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &q}}}}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
		return p
	}
	a.apply(t, scratch("under", "10Mi", "head -c 1048576 /dev/zero > /scratch/fill && sleep 3600"))
	a.waitPod(t, "under", 60*time.Second, func(p *v1.Pod) error {
		if p.Status.Phase != v1.PodRunning {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		return nil
	})
	a.apply(t, scratch("over", "1Mi", "head -c 4194304 /dev/zero > /scratch/fill && sleep 3600"))
	over := a.waitPod(t, "over", 60*time.Second, podFailed)
	if want := `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `; over.Status.Reason != "Evicted" || over.Status.Message != want {
		t.Fatalf("over: %q %q, want Evicted %q", over.Status.Reason, over.Status.Message, want)
	}

	layer := shPod("layer", "head -c 4194304 /dev/zero > /fill && sleep 3600")
	layer.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("2Mi")}
	a.apply(t, layer)
	got := a.waitPod(t, "layer", 60*time.Second, podFailed)
	if want := "Pod ephemeral local storage usage exceeds the total limit of containers 2Mi. "; got.Status.Reason != "Evicted" || got.Status.Message != want {
		t.Fatalf("layer: %q %q, want Evicted %q", got.Status.Reason, got.Status.Message, want)
	}

	under := a.waitPod(t, "under", 10*time.Second, func(p *v1.Pod) error { return nil })
	if under.Status.Phase != v1.PodRunning {
		t.Fatalf("under after the evictions: %s, want Running", under.Status.Phase)
	}
}
