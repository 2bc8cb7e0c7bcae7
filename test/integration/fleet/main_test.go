package fleet

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/actorlet/actorlet/test/testutil"

	"github.com/actorlet/actorlet/cri/procruntime"
)

// ctlBinary is the actorletctl binary built once for the whole package.
var ctlBinary string

// TestMain lets the process runtime's shim take over when the test binary is
// re-executed as one, keeps klog quiet unless -v, and builds actorletctl.
func TestMain(m *testing.M) {
	procruntime.MaybeRunShim()
	maybeRunEchoServer()
	flag.Parse()
	testutil.QuietKlog("")
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "actorletctl")
	if err != nil {
		fmt.Fprintln(os.Stderr, "create a directory for actorletctl:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctlBinary = filepath.Join(dir, "actorletctl")
	build := exec.Command("go", "build", "-o", ctlBinary, "github.com/actorlet/actorlet/cmd/actorletctl")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build actorletctl:", err)
		return 1
	}
	return m.Run()
}
