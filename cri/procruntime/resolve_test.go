package procruntime_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri/procruntime"
	"github.com/actorlet/actorlet/test/testutil"
)

// markStarting rewrites a container's record as a runtime killed in the
// middle of StartContainer leaves it: "starting", no start recorded.
func (e *env) markStarting(id string) {
	e.t.Helper()
	path := filepath.Join(e.root, "containers", id, "record.json")
	b, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(b, &rec); err != nil {
		e.t.Fatal(err)
	}
	rec["starting"] = true
	delete(rec, "startedAt")
	delete(rec, "shim")
	delete(rec, "process")
	if b, err = json.Marshal(rec); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// A runtime restarted after dying between the shim's launch of the process
// and recording the start: the process is adopted (same PID), never
// started again. Before, the container came back CREATED and the next
// StartContainer ran a second process.
func TestStartLeftHalfDoneIsAdopted(t *testing.T) {
	e := newEnv(t)
	sbID, sb := e.runSandbox("half", nil)
	id := e.run(sbID, sb, containerConfig("half", nil, "sleep", "300"))
	pid, _ := e.pids(id)
	e.rt.Stop()
	e.markStarting(id)
	e.start()

	if st := e.status(id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING || st.StartedAt == 0 {
		t.Fatalf("container left starting with its process running is %s (startedAt %d), want RUNNING", st.State, st.StartedAt)
	}
	if got, _ := e.pids(id); got != pid {
		t.Errorf("adopted pid %d, want the running %d", got, pid)
	}
	if err := e.c.StartContainer(ctx(t), id); status.Code(errorsCause(err)) != codes.FailedPrecondition {
		t.Errorf("StartContainer of the adopted container = %v, want FailedPrecondition", err)
	}
	if ps := groupMembers(pid); len(ps) != 1 {
		t.Errorf("container group has %v, want its one process", ps)
	}
	// Stop works on the adopted container.
	if err := e.c.StopContainer(ctx(t), id, 0); err != nil {
		t.Fatal(err)
	}
	e.waitExited(id)
}

// A start left half-done whose shim died without recording an exit is
// EXITED 255 Unknown and its process is killed; one whose process never
// ran (no shim record) is CREATED again and starts once.
func TestStartLeftHalfDoneShimDeadOrNeverRan(t *testing.T) {
	e := newEnv(t)
	sbID, sb := e.runSandbox("half-dead", nil)
	dead := e.run(sbID, sb, containerConfig("dead", nil, "sleep", "300"))
	pid, shim := e.pids(dead)
	never := e.create(sbID, sb, containerConfig("never", nil, "sleep", "300"))
	e.rt.Stop()
	// The shim dies with the runtime down (its process survives it).
	if err := syscall.Kill(shim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testutil.Until(t, 10*time.Second, "the shim gone", func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", shim))
		return err != nil || len(b) == 0
	})
	e.markStarting(dead)
	e.markStarting(never)
	e.start()

	if st := e.waitExited(dead); st.ExitCode != 255 || st.Reason != "Unknown" {
		t.Errorf("container whose shim died while starting: %d %q, want 255 Unknown", st.ExitCode, st.Reason)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if m := groupMembers(pid); len(m) != 0 {
			return fmt.Errorf("processes %v of the dead shim's container survive", m)
		}
		return nil
	})
	if st := e.status(never); st.State != runtimeapi.ContainerState_CONTAINER_CREATED {
		t.Fatalf("container whose process never ran is %s, want CREATED", st.State)
	}
	if err := e.c.StartContainer(ctx(t), never); err != nil {
		t.Fatalf("StartContainer of the container CREATED again: %v", err)
	}
	if st := e.status(never); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("after its start: %s", st.State)
	}
}

// Concurrent StartContainer calls of one container start one process;
// removing the sandbox meanwhile leaves none.
func TestConcurrentStartsRunOneProcess(t *testing.T) {
	e := newEnv(t)
	sbID, sb := e.runSandbox("racy", nil)
	marker := fmt.Sprintf("racy-%d", time.Now().UnixNano())
	id := e.create(sbID, sb, containerConfig("racy", nil, "sh", "-c", "sleep 300; exit 0", marker))
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := e.c.StartContainer(ctx(t), id); err == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ok != 1 {
		t.Errorf("%d StartContainer calls succeeded, want 1", ok)
	}
	if ps := testutil.Leaders(testutil.ProcsWithArg(marker)); len(ps) != 1 {
		t.Errorf("%d processes, want 1", len(ps))
	}
	if err := e.c.RemovePodSandbox(ctx(t), sbID); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if ps := testutil.ProcsWithArg(marker); len(ps) != 0 {
			return fmt.Errorf("%d processes left after the sandbox was removed", len(ps))
		}
		return nil
	})
}

// errorsCause unwraps the cri.Client's wrapping down to the gRPC status.
func errorsCause(err error) error {
	for err != nil {
		if _, ok := status.FromError(err); ok {
			return err
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
	return nil
}

// A start left half-done whose shim holds its lock but never records a
// process (hung) is not waited for forever: past the shim start timeout
// the shim is killed and, no process having run, the container is CREATED
// again.
func TestStartLeftHalfDoneHungShimIsKilled(t *testing.T) {
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("flock(1) plays the hung shim and is not installed")
	}
	t.Cleanup(procruntime.SetShimStartTimeout(500 * time.Millisecond))
	e := newEnv(t)
	sbID, sb := e.runSandbox("hung", nil)
	id := e.create(sbID, sb, containerConfig("hung", nil, "sleep", "300"))
	e.rt.Stop()
	e.markStarting(id)
	// A "shim" that locks shim.lock and hangs: flock(1) holding the lock
	// while it runs sleep, with the shim's environment.
	dir := filepath.Join(e.root, "containers", id)
	hung := exec.Command("flock", "-x", filepath.Join(dir, "shim.lock"), "sleep", "300")
	hung.Env = append(os.Environ(), "ACTORLET_PROCRUNTIME_SHIM="+dir)
	if err := hung.Start(); err != nil {
		t.Fatal(err)
	}
	hungDone := make(chan struct{})
	go func() { _ = hung.Wait(); close(hungDone) }()
	t.Cleanup(func() { _ = hung.Process.Kill(); <-hungDone })
	testutil.Until(t, 10*time.Second, "the fake shim holding its lock", func() bool {
		f, err := os.Open(filepath.Join(dir, "shim.lock"))
		if err != nil {
			return false
		}
		defer f.Close()
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
			_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			return false
		}
		return true
	})

	e.start()
	select {
	case <-hungDone:
	case <-time.After(20 * time.Second):
		t.Fatal("the hung shim was not killed")
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if st := e.status(id); st.State != runtimeapi.ContainerState_CONTAINER_CREATED {
			return fmt.Errorf("container is %s, want CREATED", st.State)
		}
		return nil
	})
	if err := e.c.StartContainer(ctx(t), id); err != nil {
		t.Fatalf("StartContainer after the hung shim was killed: %v", err)
	}
}
