package kuberuntime

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestIntegrationReclaimTerminatedPods: on the process runtime, the
// content of a pod whose work is over (its containers exited, its sandbox
// stopped) goes — dead container, sandbox, emptyDir, logs — while a pod
// named as terminated but still running is left alone.
func TestIntegrationReclaimTerminatedPods(t *testing.T) {
	e := newProcEnv(t)
	ctx := context.Background()
	done := shPod("done", map[string]string{"c": "echo finished"}, "c")
	done.Spec.RestartPolicy = v1.RestartPolicyNever
	done.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	done.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	running := shPod("running", map[string]string{"c": "exec sleep 300"}, "c")
	e.syncUntil(t, done, func(s v1.PodStatus) error {
		if s.Phase != v1.PodSucceeded {
			return errors.New("phase " + string(s.Phase))
		}
		return nil
	})
	e.syncUntilRunning(t, running)
	scratch := filepath.Join(e.m.opts.PodsDir, string(done.UID), "volumes", "emptydir", "scratch")
	if err := os.WriteFile(filepath.Join(scratch, "big"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(e.m.opts.PodLogsDir, "default_done_"+string(done.UID))
	if _, err := os.Stat(logs); err != nil {
		t.Fatal(err)
	}

	// Its sandbox stopped (if a sync has not done so already), its work is
	// over; the running pod, named too, is left alone.
	pods, err := e.m.GetPods(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if p.ID == done.UID {
			if err := e.m.KillPod(ctx, done, p, i64(1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	res, err := e.m.ReclaimTerminatedPods(ctx, []types.UID{done.UID, running.UID, done.UID})
	if err != nil {
		t.Fatal(err)
	}
	if res != (Reclaimed{Pods: 1, Containers: 1, Sandboxes: 1}) {
		t.Fatalf("reclaimed %+v, want the done pod's container and sandbox", res)
	}
	for _, dir := range []string{scratch, logs} {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after the reclaim: %v, want it gone", dir, err)
		}
	}
	sel := map[string]string{LabelPodUID: string(done.UID)}
	if cs, err := e.m.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel}); err != nil || len(cs) != 0 {
		t.Errorf("containers of the done pod: %v, %v", cs, err)
	}
	if _, api := e.status(t, running); api.Phase != v1.PodRunning {
		t.Errorf("running pod after the reclaim: %s", api.Phase)
	}
	// Nothing left: a second reclaim removes nothing; an empty UID (it
	// would select every unlabeled container) is ignored.
	if res, err := e.m.ReclaimTerminatedPods(ctx, []types.UID{done.UID, "", done.UID}); err != nil || res != (Reclaimed{}) {
		t.Fatalf("second reclaim: %+v, %v", res, err)
	}
}
