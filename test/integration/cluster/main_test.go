package cluster

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/actorlet/actorlet/test/testutil"
)

// ctlBinary is actorletctl, built once: the quorum-loss scenario checks
// what an operator is told.
var ctlBinary string

func TestMain(m *testing.M) {
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
