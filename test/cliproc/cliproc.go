// Package cliproc runs a command-line program (actorletctl) as a process a
// test talks to while it runs: on pipes, or on a real pseudo-terminal the
// test types into and resizes. The integration and end-to-end suites use
// it for exec, attach, port-forward and debug.
package cliproc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/actorlet/actorlet/test/testutil"
)

// Proc is a running program. Out holds its stdout (on a pty: everything it
// writes to the terminal), Err its stderr (empty on a pty).
type Proc struct {
	Cmd      *exec.Cmd
	Out, Err testutil.SyncBuffer
	Pty      *os.File // the terminal's controlling side, nil on pipes
	timeout  time.Duration
	done     chan struct{}
	code     int
}

// Start starts name with args and stdin (nil: none); with a terminal size
// it runs on a new pseudo-terminal instead. timeout bounds each wait on it.
// t.Cleanup kills it and closes its terminal.
func Start(t *testing.T, timeout time.Duration, stdin io.Reader, size *pty.Winsize, name string, args ...string) *Proc {
	t.Helper()
	p := &Proc{Cmd: exec.Command(name, args...), timeout: timeout, done: make(chan struct{})}
	if size != nil {
		ptmx, err := pty.StartWithSize(p.Cmd, size)
		if err != nil {
			t.Fatalf("start %s on a pty: %v", name, err)
		}
		p.Pty = ptmx
		go func() { _, _ = io.Copy(&p.Out, ptmx) }()
	} else {
		p.Cmd.Stdin, p.Cmd.Stdout, p.Cmd.Stderr = stdin, &p.Out, &p.Err
		if err := p.Cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
	}
	go func() {
		var ee *exec.ExitError
		if err := p.Cmd.Wait(); errors.As(err, &ee) {
			p.code = ee.ExitCode()
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.Cmd.Process.Kill()
		<-p.done
		if p.Pty != nil {
			_ = p.Pty.Close()
		}
	})
	return p
}

// WaitOut waits for what on stdout (on a pty: anywhere in the output).
func (p *Proc) WaitOut(t *testing.T, what string) {
	t.Helper()
	testutil.EventuallyEvery(t, p.timeout, 100*time.Millisecond, func() error {
		if !strings.Contains(p.Out.String(), what) {
			return fmt.Errorf("%v: no %q in stdout:\n%s\nstderr:\n%s", p.Cmd.Args[1:], what, p.Out.String(), p.Err.String())
		}
		return nil
	})
}

// Write types s on the terminal.
func (p *Proc) Write(t *testing.T, s string) {
	t.Helper()
	if _, err := p.Pty.Write([]byte(s)); err != nil {
		t.Fatalf("write to the terminal: %v", err)
	}
}

// Wait waits for the process to exit and returns its exit code.
func (p *Proc) Wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(p.timeout):
		t.Fatalf("%v still running; output:\n%s\n%s", p.Cmd.Args, p.Out.String(), p.Err.String())
		return -1
	}
}

// HostProcesses lists the PIDs of this host's processes whose command line
// starts with marker (a container of the process runtime or of containerd
// is one).
func HostProcesses(marker string) []string {
	out, _ := exec.Command("pgrep", "-f", "^"+marker).Output()
	return strings.Fields(string(out))
}

// ProcessRuns waits until a process runs whose command line starts with
// marker.
func ProcessRuns(t *testing.T, timeout time.Duration, marker string) {
	t.Helper()
	testutil.EventuallyEvery(t, timeout, 100*time.Millisecond, func() error {
		if len(HostProcesses(marker)) == 0 {
			return fmt.Errorf("%q does not run", marker)
		}
		return nil
	})
}

// ProcessGone waits until no process runs whose command line starts with
// marker.
func ProcessGone(t *testing.T, timeout time.Duration, marker string) {
	t.Helper()
	testutil.EventuallyEvery(t, timeout, 100*time.Millisecond, func() error {
		if pids := HostProcesses(marker); len(pids) > 0 {
			return fmt.Errorf("%q still runs as %v", marker, pids)
		}
		return nil
	})
}
