package kuberuntime

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// A container created but never started (the agent died between
// CreateContainer and StartContainer) is started on the next sync, not left
// behind beside a second instance.
func TestSyncPodStartsContainerCreatedButNeverStarted(t *testing.T) {
	for _, tc := range []struct {
		name        string
		changeSpec  bool
		wantIDs     int
		wantRestart int32
	}{
		{"same spec: the created instance is started", false, 1, 0},
		{"changed spec: a new instance", true, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			pod := newPod("adopt", "app")
			// The first pass gets as far as CreateContainer.
			e.rt.FakeRuntimeService.InjectError("StartContainer", errors.New("agent gone"))
			if err := e.sync(t, pod, nil).Error(); err == nil {
				t.Fatal("first SyncPod succeeded, want the injected StartContainer error")
			}
			created := e.rt.containerIDs("app")
			if len(created) != 1 {
				t.Fatalf("containers after the first pass = %v, want 1", created)
			}
			if tc.changeSpec {
				pod.Spec.Containers[0].Env = []v1.EnvVar{{Name: "X", Value: "1"}}
			}

			if err := e.sync(t, pod, nil).Error(); err != nil {
				t.Fatalf("second SyncPod: %v", err)
			}
			ids := e.rt.containerIDs("app")
			if len(ids) != tc.wantIDs {
				t.Errorf("container instances = %d (%v), want %d", len(ids), ids, tc.wantIDs)
			}
			_, api := e.status(t, pod)
			cs := api.ContainerStatuses[0]
			if cs.State.Running == nil || cs.RestartCount != tc.wantRestart {
				t.Errorf("status %+v restartCount %d, want running with restartCount %d", cs.State, cs.RestartCount, tc.wantRestart)
			}
			if !tc.changeSpec && cs.ContainerID != "fakeRuntime://"+created[0] {
				t.Errorf("running container %s, want the created one %s", cs.ContainerID, created[0])
			}
		})
	}
}
