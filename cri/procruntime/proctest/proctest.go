// Package proctest starts the process runtime for tests: on a short unix
// socket, dialed with the CRI client, destroyed (every container killed)
// when the test ends. It depends only on cri and procruntime, so the tests
// of packages below the agent (kuberuntime, crilogs) can use it as the
// integration suites do through test/testenv.
package proctest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/cri/procruntime"
	"github.com/actorlet/actorlet/test/testutil"
)

// Start starts a process runtime keeping its state in rootDir, serving on
// a short socket path (unix socket paths are limited to about 100 bytes),
// and dials it. t.Cleanup closes the client and destroys the runtime. It
// runs unisolated, on the host's filesystem (HostFilesystem: a volume
// stays at its host path), as any user can.
func Start(t testing.TB, rootDir string) (*procruntime.Runtime, *cri.Client) {
	t.Helper()
	return StartWith(t, procruntime.Options{RootDir: rootDir, HostIP: "127.0.0.1", HostFilesystem: true})
}

// StartIsolated is Start with every isolation this machine allows
// (procruntime.DefaultIsolation) and filesystem views; the test is skipped
// without them (they need root).
func StartIsolated(t testing.TB, rootDir string, hide ...string) (*procruntime.Runtime, *cri.Client) {
	t.Helper()
	iso := procruntime.DefaultIsolation()
	if !iso.Filesystem {
		t.Skipf("filesystem views need root and nsenter (have isolation %s)", iso)
	}
	return StartWith(t, procruntime.Options{RootDir: rootDir, HostIP: "127.0.0.1", Isolation: iso, HidePaths: hide})
}

// StartWith is Start with opts (RootDir included).
func StartWith(t testing.TB, opts procruntime.Options) (*procruntime.Runtime, *cri.Client) {
	t.Helper()
	sockDir, err := os.MkdirTemp("", "rt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(sockDir) })
	endpoint := "unix://" + filepath.Join(sockDir, "cri.sock")
	rt, err := procruntime.Start(opts, endpoint)
	if err != nil {
		t.Fatalf("start the process runtime: %v", err)
	}
	t.Cleanup(rt.Destroy)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := cri.Dial(ctx, endpoint)
	if err != nil {
		t.Fatalf("dial the process runtime: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return rt, c
}

// KillHolder kills (SIGKILL) the process holding the namespaces of the
// sandbox (its verbose status' info.pid), as a crash would.
func KillHolder(t testing.TB, c *cri.Client, sandboxID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.PodSandboxStatus(ctx, sandboxID, true)
	if err != nil {
		t.Fatal(err)
	}
	var info struct{ Pid int }
	if err := json.Unmarshal([]byte(resp.Info["info"]), &info); err != nil || info.Pid == 0 {
		t.Fatalf("sandbox %s: info %q: %v (no holder: isolation off?)", sandboxID, resp.Info["info"], err)
	}
	if err := syscall.Kill(info.Pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the holder of sandbox %s: %v", sandboxID, err)
	}
}

// Main is the TestMain of a package whose tests start a process runtime:
// the test binary, re-executed by the runtime as a container's shim, runs
// the shim (procruntime.MaybeRunShim); otherwise it runs the tests and
// exits with their result.
func Main(m *testing.M) {
	procruntime.MaybeRunShim()
	os.Exit(m.Run())
}

// MainQuiet is Main with klog kept quiet unless -v
// (testutil.Main with verbosity).
func MainQuiet(m *testing.M, verbosity string) {
	procruntime.MaybeRunShim()
	testutil.Main(m, verbosity)
}
