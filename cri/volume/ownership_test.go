package volume

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func gidOf(t *testing.T, p string) int64 {
	t.Helper()
	info, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	gid, _ := fileGID(info)
	return gid
}

// SetOwnership gives an emptyDir and an atomically written volume to the
// fsGroup as the kubelet does: group, group rw (r for read-only), setgid
// directories; symlinks are not followed.
func TestSetOwnership(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing a file's group to any fsGroup needs root")
	}
	const group = 4321
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.MkdirAll(filepath.Join(empty, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(empty, "sub", "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(dir, "outside")
	if err := os.WriteFile(outside, []byte("host"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(empty, "link")); err != nil {
		t.Fatal(err)
	}
	if err := SetOwnership(empty, group, nil, false); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]fs.FileMode{
		empty: fs.ModeDir | fs.ModeSetgid | 0o775, filepath.Join(empty, "sub"): fs.ModeDir | fs.ModeSetgid | 0o775,
		filepath.Join(empty, "sub", "f"): 0o660,
	} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode() != want || gidOf(t, p) != group {
			t.Errorf("%s: mode %v gid %d, want %v gid %d", p, info.Mode(), gidOf(t, p), want, group)
		}
	}
	if gidOf(t, outside) == group {
		t.Error("the symlink was followed out of the volume")
	}

	projected := filepath.Join(dir, "projected")
	if _, err := Write(projected, map[string]File{"a/key": {Data: []byte("v"), Mode: 0o644}}); err != nil {
		t.Fatal(err)
	}
	if err := SetOwnership(projected, group, nil, true); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(projected, "a", "key"))
	if err != nil || info.Mode() != 0o644 || gidOf(t, filepath.Join(projected, DataDir, "a", "key")) != group {
		t.Fatalf("projected file: %v %v", info, err)
	}

	// OnRootMismatch: a matching root is not walked again.
	if err := os.Chmod(filepath.Join(empty, "sub", "f"), 0o600); err != nil {
		t.Fatal(err)
	}
	policy := v1.FSGroupChangeOnRootMismatch
	if err := SetOwnership(empty, group, &policy, false); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(filepath.Join(empty, "sub", "f")); info.Mode() != 0o600 {
		t.Errorf("OnRootMismatch walked a matching volume: %v", info.Mode())
	}
	always := v1.FSGroupChangeAlways
	if err := SetOwnership(empty, group, &always, false); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(filepath.Join(empty, "sub", "f")); info.Mode() != 0o660 {
		t.Errorf("Always did not walk: %v", info.Mode())
	}
}

// A volume with more entries than the limit is an error naming it, not a
// walk without end.
func TestSetOwnershipBounded(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing a file's group to any fsGroup needs root")
	}
	dir := t.TempDir()
	for i := range 3 {
		if err := os.WriteFile(filepath.Join(dir, string(rune('a'+i))), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := maxOwnershipEntries
	maxOwnershipEntries = 2
	t.Cleanup(func() { maxOwnershipEntries = old })
	if err := SetOwnership(dir, 4321, nil, false); err == nil || !strings.Contains(err.Error(), "more than 2 files and directories") {
		t.Fatalf("SetOwnership = %v, want the limit named", err)
	}
}
