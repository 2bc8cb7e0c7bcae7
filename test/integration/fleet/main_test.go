package fleet

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/cri/procruntime"
)

// ctlBinary is the actorletctl binary built once for the whole package.
var ctlBinary string

// TestMain lets the process runtime's shim take over when the test binary is
// re-executed as one, keeps klog quiet unless -v, and builds actorletctl.
func TestMain(m *testing.M) {
	procruntime.MaybeRunShim()
	flag.Parse()
	if !testing.Verbose() {
		fs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(fs)
		_ = fs.Set("logtostderr", "false")
		_ = fs.Set("stderrthreshold", "FATAL")
		klog.SetOutput(io.Discard)
	}
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
