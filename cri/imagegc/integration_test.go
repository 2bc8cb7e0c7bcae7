package imagegc

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/cri/procruntime/proctest"
)

// imageNames lists the runtime's images by tag.
func imageNames(t *testing.T, c *cri.Client) []string {
	t.Helper()
	imgs, err := c.ListImages(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, img := range imgs {
		out = append(out, img.GetRepoTags()...)
	}
	slices.Sort(out)
	return out
}

// TestIntegrationProcessRuntime runs image GC over gRPC against the
// process runtime: with the image filesystem past the high threshold
// (usage injected, the mountpoint the runtime's ImageFsInfo names), the
// unused image is removed, the one a container was created from is kept
// while the container runs, after it exited, and until it is removed.
func TestIntegrationProcessRuntime(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: runs host processes")
	}
	root := t.TempDir()
	_, c := proctest.Start(t, filepath.Join(root, "state"))
	ctx := context.Background()
	for _, img := range []string{"busybox:1.36", "alpine:3.20"} {
		if _, err := c.PullImage(ctx, &runtimeapi.ImageSpec{Image: img}, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	sb := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "gc", Namespace: "default", Uid: "uid-gc"},
		LogDirectory: filepath.Join(root, "logs"),
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}},
	}
	sbID, err := c.RunPodSandbox(ctx, sb, "")
	if err != nil {
		t.Fatal(err)
	}
	cid, err := c.CreateContainer(ctx, sbID, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
		Image:    &runtimeapi.ImageSpec{Image: "busybox:1.36"},
		Command:  []string{"sleep", "300"},
		LogPath:  "app/0.log",
	}, sb)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.StartContainer(ctx, cid); err != nil {
		t.Fatal(err)
	}

	wantMount := filepath.Join(root, "state", "images")
	var mount string
	m, err := New(c, Options{Policy: Policy{HighThresholdPercent: 85, LowThresholdPercent: 80}, FsStats: func(_ context.Context, mp string) (FsStats, error) {
		mount = mp
		return FsStats{Capacity: 1 << 30, Available: 1 << 20}, nil // 99% used
	}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.GarbageCollect(ctx)
	if err == nil {
		t.Fatal("want the shortfall error: records free a few bytes of the gigabyte asked")
	}
	if mount != wantMount {
		t.Errorf("statfs of %q, want the runtime's image directory %q", mount, wantMount)
	}
	if res.UsagePercent != 100 || !slices.Equal(res.Removed, []string{"docker.io/library/alpine:3.20"}) || res.Freed == 0 {
		t.Fatalf("result %+v: want alpine removed, its record's bytes freed", res)
	}
	if got := imageNames(t, c); !slices.Equal(got, []string{"docker.io/library/busybox:1.36"}) {
		t.Fatalf("images %v, want busybox only", got)
	}

	// Exited, the container still holds its image.
	if err := c.StopContainer(ctx, cid, 0); err != nil {
		t.Fatal(err)
	}
	if res, _ := m.GarbageCollect(ctx); len(res.Removed) != 0 {
		t.Fatalf("removed %v while an exited container references it", res.Removed)
	}
	// Removed, it is no longer in use: it goes.
	if err := c.RemoveContainer(ctx, cid); err != nil {
		t.Fatal(err)
	}
	if res, _ := m.GarbageCollect(ctx); !slices.Equal(res.Removed, []string{"docker.io/library/busybox:1.36"}) {
		t.Fatalf("removed %v, want busybox once its container is gone", res.Removed)
	}
	if got := imageNames(t, c); len(got) != 0 {
		t.Fatalf("images %v, want none", got)
	}
}

// TestIntegrationRealStatfs: without injected usage the manager reads the
// real filesystem of the runtime's image directory; with the thresholds at
// 1% and 0% any real usage starts a collection.
func TestIntegrationRealStatfs(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: runs host processes")
	}
	_, c := proctest.Start(t, filepath.Join(t.TempDir(), "state"))
	ctx := context.Background()
	if _, err := c.PullImage(ctx, &runtimeapi.ImageSpec{Image: "busybox:1.36"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	m, err := New(c, Options{Policy: Policy{HighThresholdPercent: 1, LowThresholdPercent: 0}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.GarbageCollect(ctx)
	if res.UsagePercent < 1 {
		t.Skipf("the temp filesystem is %d%% used: under any threshold", res.UsagePercent)
	}
	if err == nil || !slices.Equal(res.Removed, []string{"docker.io/library/busybox:1.36"}) {
		t.Fatalf("result %+v, err %v: want busybox removed and the shortfall reported", res, err)
	}
}
