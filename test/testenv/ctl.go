package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

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
