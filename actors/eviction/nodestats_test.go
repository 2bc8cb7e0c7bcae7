package eviction

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The working set is the cgroup's usage less its inactive file pages,
// against the configured capacity; processes are /proc's numeric dirs.
func TestNodeStatsRead(t *testing.T) {
	proc, cg := t.TempDir(), t.TempDir()
	write(t, filepath.Join(proc, "meminfo"), "MemTotal:       2048000 kB\nMemAvailable:   1024000 kB\n")
	write(t, filepath.Join(proc, "sys/kernel/pid_max"), "100\n")
	for _, d := range []string{"1", "42", "self", "700"} {
		if err := os.MkdirAll(filepath.Join(proc, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(cg, "memory/pods/memory.usage_in_bytes"), "300000000\n")
	write(t, filepath.Join(cg, "memory/pods/memory.stat"), "cache 1\ntotal_inactive_file 100000000\n")
	n := NodeStats{RootDir: t.TempDir(), ProcRoot: proc, CgroupRoot: cg, MemoryCgroup: "pods", MemoryCapacity: 400000000}
	s, err := n.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.MemoryCapacity != 400000000 || s.MemoryWorkingSet != 200000000 {
		t.Errorf("memory = %d of %d, want 200000000 of 400000000", s.MemoryWorkingSet, s.MemoryCapacity)
	}
	if s.PIDMax != 100 || s.PIDs != 3 {
		t.Errorf("pids = %d of %d, want 3 of 100", s.PIDs, s.PIDMax)
	}
	if s.NodeFs.Capacity == 0 || s.NodeFs.Inodes == 0 {
		t.Errorf("nodefs not read: %+v", s.NodeFs)
	}
	// Without a usage file at the root (cgroup v2): MemTotal less MemAvailable.
	n.MemoryCgroup, n.MemoryCapacity = "", 0
	s, err = n.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.MemoryCapacity != 2048000*1024 || s.MemoryWorkingSet != 1024000*1024 {
		t.Errorf("root memory = %d of %d", s.MemoryWorkingSet, s.MemoryCapacity)
	}
	// A configured cgroup that does not exist is an error naming it.
	n.MemoryCgroup = "missing"
	if _, err := n.Read(context.Background()); err == nil || !strings.Contains(err.Error(), "memory/missing") {
		t.Errorf("missing cgroup: %v", err)
	}
}
