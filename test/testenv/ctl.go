package testenv

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/actorlet/actorlet/cri/procruntime"
	"github.com/actorlet/actorlet/test/testutil"
)

// MainWithActorletctl is the TestMain of a suite that runs agents on the
// process runtime and the actorletctl binary: the test binary re-executed
// as a container's shim runs the shim; otherwise klog stays quiet unless
// -v, actorletctl is built into *path (RunWithActorletctl) and the tests
// run.
func MainWithActorletctl(m *testing.M, path *string) {
	procruntime.MaybeRunShim()
	flag.Parse()
	testutil.QuietKlog("")
	os.Exit(RunWithActorletctl(m, path))
}

// RunWithActorletctl is the body of a TestMain whose tests run the
// actorletctl binary, as operators do: it builds it once into a new
// directory, sets *path to it, runs the tests, and removes the directory.
// It returns the exit code for os.Exit.
func RunWithActorletctl(m *testing.M, path *string) int {
	dir, err := os.MkdirTemp("", "actorletctl")
	if err != nil {
		fmt.Fprintln(os.Stderr, "create a directory for actorletctl:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	*path = filepath.Join(dir, "actorletctl")
	build := exec.Command("go", "build", "-o", *path, "github.com/actorlet/actorlet/cmd/actorletctl")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build actorletctl:", err)
		return 1
	}
	return m.Run()
}
