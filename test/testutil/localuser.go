package testutil

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// OtherUser is a second local user for tests of what another user of the
// machine can reach: nobody (uid and gid 65534), which owns nothing. Only
// root can run a process as another user: the test is skipped otherwise,
// with the reason.
func OtherUser(t testing.TB) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a process as a second local user (nobody, uid 65534)")
	}
	return &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}
}

// RunAs runs name with args as cred and returns its combined output and
// error (an *exec.ExitError when it ran and failed). It is bounded by 30 s.
func RunAs(t testing.TB, cred *syscall.Credential, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// OpenToOthers makes dir and its parents up to the system's temp directory
// traversable and listable by every user (t.TempDir makes them 0700), so
// only the modes of what the code under test creates inside stand between
// another user and its files. Each mode is put back on cleanup.
func OpenToOthers(t testing.TB, dir string) {
	t.Helper()
	stop := filepath.Clean(os.TempDir())
	for d := filepath.Clean(dir); d != stop && d != "/" && d != "."; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		mode := fi.Mode().Perm()
		if err := os.Chmod(d, mode|0o055); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(d, mode) })
	}
}

// Umask sets the process's umask for the rest of the test and puts the old
// one back on cleanup. The umask is process-wide: tests that use it must
// not run in parallel with others creating files.
func Umask(t testing.TB, mask int) {
	t.Helper()
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}
