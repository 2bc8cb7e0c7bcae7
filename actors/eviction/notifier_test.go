package eviction

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMemoryThresholdUsage(t *testing.T) {
	ths := mustParse(t, Flags{Hard: "memory.available<100Mi", Soft: "memory.available<10%", SoftGracePeriod: "memory.available=1m"})
	s := Stats{MemoryCapacity: 1000 * mi, MemoryInactiveFile: 30 * mi}
	if got := memoryThresholdUsage(ths[0], s); got != 930*mi {
		t.Errorf("hard: %d, want capacity - 100Mi + inactive = %d", got, 930*mi)
	}
	if got := memoryThresholdUsage(ths[1], s); got != 1000*mi-uint64(0.1*float64(1000*mi))+30*mi {
		t.Errorf("soft 10%%: %d", got)
	}
	if got := memoryThresholdUsage(ths[0], Stats{MemoryCapacity: 50 * mi}); got != 0 {
		t.Errorf("threshold above the capacity: %d, want 0 (never armed)", got)
	}
}

// The kernel wakes the notifier when a process in the cgroup pushes its
// usage over the threshold (root, cgroup v1).
func TestMemoryNotifierFires(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("registering a cgroup memory threshold needs root")
	}
	dir := filepath.Join("/sys/fs/cgroup/memory", "actorlet-evict-test-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("no cgroup v1 memory hierarchy: %v", err)
	}
	t.Cleanup(func() { removeCgroup(t, dir) })
	n, err := armMemoryNotifier(dir, 20*mi)
	if err != nil {
		t.Fatal(err)
	}
	crossed := make(chan struct{}, 8)
	done := make(chan struct{})
	go func() { n.wait(func() { crossed <- struct{}{} }); close(done) }()
	// Joins the cgroup, then holds 64MiB in a shell variable.
	cmd := exec.Command("sh", "-c", `echo $$ > "$1/cgroup.procs" && exec sh -c 'x=$(head -c 67108864 /dev/zero | tr "\0" a); exec sleep 60'`, "sh", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	select {
	case <-crossed:
	case <-time.After(30 * time.Second):
		t.Fatal("no notification within 30s of a 64MiB allocation over a 20MiB threshold")
	}
	n.close()
	<-done // close ends the wait
}

// removeCgroup kills what still runs in the cgroup (the allocation's
// pipeline may outlive the shell) and removes it.
func removeCgroup(t *testing.T, dir string) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		err := os.Remove(dir)
		if err == nil || os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("remove cgroup %s: %v", dir, err)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
