package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri/procruntime"
	"github.com/actorlet/actorlet/cri/procruntime/proctest"
	"github.com/actorlet/actorlet/test/testutil"
)

// TestRunningFindsLiveContainers: `actorlet running` (what make clean asks
// before removing a root directory) says nothing runs for an empty
// directory, lists the pods whose shims are alive in the process runtime's
// state, and stops listing them once they are removed.
func TestRunningFindsLiveContainers(t *testing.T) {
	root := t.TempDir()
	running := func() (string, int) {
		var out, errOut bytes.Buffer
		code := runRunning([]string{"--root-dir", root}, &out, &errOut)
		return out.String() + errOut.String(), code
	}
	if out, code := running(); code != 0 || !strings.Contains(out, "Nothing of "+root+" runs") {
		t.Fatalf("empty root: exit %d, %q", code, out)
	}

	_, rt := proctest.Start(t, filepath.Join(root, "runtime"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := rt.PullImage(ctx, &runtimeapi.ImageSpec{Image: "busybox"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	sbConfig := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-web"},
		LogDirectory: t.TempDir(),
	}
	sb, err := rt.RunPodSandbox(ctx, sbConfig, "")
	if err != nil {
		t.Fatal(err)
	}
	id, err := rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
		Image:    &runtimeapi.ImageSpec{Image: "busybox"},
		Command:  []string{"sleep", "3600"},
		LogPath:  "app.log",
		Labels:   map[string]string{"io.kubernetes.pod.name": "web", "io.kubernetes.pod.namespace": "default"},
	}, sbConfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	out, code := running()
	if code != 1 || !strings.Contains(out, "pod default/web, container app (shim pid ") || !strings.Contains(out, "1 containers of 1 pods") ||
		!strings.Contains(out, "with nothing to adopt or stop them") {
		t.Fatalf("a live container: exit %d, %q", code, out)
	}
	if err := rt.StopPodSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	if err := rt.RemovePodSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		live, err := procruntime.LiveContainers(filepath.Join(root, "runtime"))
		if err != nil || len(live) != 0 {
			return fmt.Errorf("live containers after the pod was removed: %v, %v", live, err)
		}
		return nil
	})
}
