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

// Between ticks: the actor under a parent, its clock never stepped after
// the first round, memory.available read from a test-created cgroup v1
// memory cgroup with a capacity of 100Mi and a hard threshold of 60Mi. A
// process in the cgroup allocating 64Mi (again and again, so the usage
// crosses the armed threshold whenever it is armed) wakes a round through
// the kernel's notification, and the round evicts the pod. (With
// NoMemoryNotifications the same test sees no eviction.)
func TestActorNotifiedBetweenTicks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("registering a cgroup memory threshold needs root")
	}
	name := "actorlet-evict-wake-" + strconv.Itoa(os.Getpid())
	dir := filepath.Join("/sys/fs/cgroup/memory", name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("no cgroup v1 memory hierarchy: %v", err)
	}
	t.Cleanup(func() { removeCgroup(t, dir) })
	stats := NodeStats{MemoryCgroup: "/" + name, MemoryCapacity: 100 * mi}
	hog := pod("hog", 0, "")
	p := startUnderWith(t, Config{Thresholds: mustParse(t, Flags{Hard: "memory.available<60Mi"}), Stats: stats.Read}, nil, hog)
	cmd := exec.Command("sh", "-c", `echo $$ > "$1/cgroup.procs" && while true; do x=$(head -c 67108864 /dev/zero | tr "\0" a); sleep 0.2; unset x; sleep 0.2; done`, "sh", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	select {
	case k := <-p.kills:
		if k.UID != hog.UID || !strings.HasPrefix(k.Options.Message, "The node was low on resource: memory. Threshold quantity: 60Mi, available: ") {
			t.Fatalf("kill %s %q", k.UID, k.Options.Message)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("no eviction within 60s: the memory threshold notification did not wake a round (the clock never ticked)")
	}
}
