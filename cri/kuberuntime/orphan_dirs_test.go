package kuberuntime

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestIntegrationCleanupOrphanedPodDirs: a sweep removes the directory of
// a pod left by an earlier agent (its memory emptyDir unmounted first),
// and keeps those of a running pod, a pod the supervisor names, a pod
// synced since the agent started, one with a mount the agent did not make
// below it, and what is not a pod directory.
func TestIntegrationCleanupOrphanedPodDirs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("memory emptyDirs are tmpfs mounts: needs root")
	}
	e := newProcEnv(t)
	ctx := context.Background()
	running := shPod("running", map[string]string{"c": "exec sleep 300"}, "c")
	running.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	running.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	e.syncUntilRunning(t, running)

	pods := e.m.opts.PodsDir
	mkdir := func(p ...string) string {
		d := filepath.Join(append([]string{pods}, p...)...)
		if err := os.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
		return d
	}
	mount := func(d string) {
		if err := syscall.Mount("tmpfs", d, "tmpfs", 0, "size=64k"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Unmount(d, syscall.MNT_DETACH) })
	}
	orphan := "0f0e0d0c-0000-4000-8000-000000000001"
	mount(mkdir(orphan, "volumes", "emptydir", "cache"))
	if err := os.WriteFile(filepath.Join(pods, orphan, "volumes", "emptydir", "cache", "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	named := "0f0e0d0c-0000-4000-8000-000000000002"
	mkdir(named, "volumes")
	synced := "0f0e0d0c-0000-4000-8000-000000000003"
	mkdir(synced, "volumes")
	e.m.claimPodDir(types.UID(synced))
	foreign := "0f0e0d0c-0000-4000-8000-000000000004"
	mount(mkdir(foreign, "volumes", "other"))
	notPod := mkdir("Not_A_Pod")
	if err := os.WriteFile(filepath.Join(pods, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}

	before, _ := os.ReadDir(pods)
	n, err := e.m.CleanupOrphanedPodDirs(ctx, func(uid types.UID) bool { return uid == types.UID(named) })
	if n != 1 {
		t.Errorf("removed %d directories of %v, want 1 (the orphan)", n, before)
	}
	if err == nil || !strings.Contains(err.Error(), foreign) || !strings.Contains(err.Error(), "mounts below it") {
		t.Errorf("error %v, want one naming the directory with a foreign mount", err)
	}
	if _, err := os.Stat(filepath.Join(pods, orphan)); !os.IsNotExist(err) {
		t.Errorf("the orphan's directory is still there: %v", err)
	}
	if left, _ := mountsUnder(filepath.Join(pods, orphan)); len(left) > 0 {
		t.Errorf("the orphan's memory emptyDir is still mounted: %v", left)
	}
	for _, d := range []string{string(running.UID), named, synced, foreign, filepath.Base(notPod), "file"} {
		if _, err := os.Stat(filepath.Join(pods, d)); err != nil {
			t.Errorf("%s removed: %v", d, err)
		}
	}
}

// TestClaimWaitsForItsRemovalOnly: a sync of a pod whose directory a sweep
// is removing waits until the removal ends; a sync of another pod does
// not wait.
func TestClaimWaitsForItsRemovalOnly(t *testing.T) {
	m := NewManager(nil, Options{})
	m.podDirsMu.Lock()
	m.removingDirs["a"] = true
	m.podDirsMu.Unlock()
	m.claimPodDir("b") // returns at once
	claimed := make(chan struct{})
	go func() { m.claimPodDir("a"); close(claimed) }()
	select {
	case <-claimed:
		t.Fatal("claimed a directory being removed")
	case <-time.After(100 * time.Millisecond):
	}
	m.podDirsMu.Lock()
	delete(m.removingDirs, "a")
	m.podDirsDone.Broadcast()
	m.podDirsMu.Unlock()
	<-claimed
	if !m.podDirs["a"] || !m.podDirs["b"] {
		t.Errorf("claims %v", m.podDirs)
	}
}

// A sweep whose pod directories are all kept (every pod of a busy node is
// desired) asks the runtime nothing: the housekeeping pass runs it every
// two seconds.
func TestSweepWithNothingToRemoveListsNoSandboxes(t *testing.T) {
	e := newEnv(t)
	for _, uid := range []string{"0f0e0d0c-0000-4000-8000-000000000011", "0f0e0d0c-0000-4000-8000-000000000012"} {
		if err := os.MkdirAll(filepath.Join(e.m.opts.PodsDir, uid, "volumes"), 0o750); err != nil {
			t.Fatal(err)
		}
	}
	before := len(e.rt.FakeRuntimeService.GetCalls())
	n, err := e.m.CleanupOrphanedPodDirs(context.Background(), func(types.UID) bool { return true })
	if n != 0 || err != nil {
		t.Fatalf("sweep = %d, %v; want 0, nil", n, err)
	}
	if calls := e.rt.FakeRuntimeService.GetCalls()[before:]; len(calls) != 0 {
		t.Fatalf("a sweep with every directory kept called the runtime: %v", calls)
	}
	// One directory not kept: the runtime is asked, and the directory of
	// a pod it has no sandbox of is removed.
	n, err = e.m.CleanupOrphanedPodDirs(context.Background(), func(uid types.UID) bool { return uid != "0f0e0d0c-0000-4000-8000-000000000012" })
	if n != 1 || err != nil {
		t.Fatalf("sweep = %d, %v; want 1, nil", n, err)
	}
	if calls := e.rt.FakeRuntimeService.GetCalls(); !slices.Contains(calls, "ListPodSandbox") {
		t.Fatalf("a sweep with a candidate did not list sandboxes: %v", calls)
	}
}
