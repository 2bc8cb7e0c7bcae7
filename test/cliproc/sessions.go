package cliproc

import (
	"io"
	"strings"
	"syscall"
	"testing"

	"github.com/creack/pty"
)

// Starter starts actorletctl with args in the suite's namespace and bus,
// with stdin (nil: none); with a terminal size on a new pseudo-terminal.
// The fleet and end-to-end suites each have one, and share the scenarios
// below: the same checks against the process runtime and containerd.
type Starter func(t *testing.T, stdin io.Reader, size *pty.Winsize, args ...string) *Proc

// Shell checks `exec -it <pod> -- sh` on a real terminal of 24x80: the
// remote terminal gets the local size and follows a resize (the kernel's
// SIGWINCH), Ctrl-C interrupts the remote command and not actorletctl, and
// the remote's exit code is actorletctl's.
func Shell(t *testing.T, start Starter, pod string) {
	p := start(t, nil, &pty.Winsize{Rows: 24, Cols: 80}, "exec", "-it", pod, "--", "sh")
	// The remote terminal gets its size a moment after the shell starts
	// (as with kubectl): wait for it.
	p.Write(t, `while [ "$(stty size)" = "0 0" ]; do sleep 0.1; done; echo "size=$(stty size)"`+"\r")
	p.WaitOut(t, "size=24 80")
	if err := pty.Setsize(p.Pty, &pty.Winsize{Rows: 30, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	p.Write(t, `while [ "$(stty size)" = "24 80" ]; do sleep 0.1; done; echo "size=$(stty size)"`+"\r")
	p.WaitOut(t, "size=30 100")
	p.Write(t, "sleep 1001\r")
	ProcessRuns(t, p.timeout, "sleep 1001")
	p.Write(t, "\x03") // Ctrl-C: to the remote, not to actorletctl
	ProcessGone(t, p.timeout, "sleep 1001")
	p.Write(t, "echo after-$((40+2))\r")
	p.WaitOut(t, "after-42")
	p.Write(t, "exit 3\r")
	if code := p.Wait(t); code != 3 {
		t.Fatalf("exec -it exited %d, want the remote's 3; output:\n%s", code, p.Out.String())
	}
}

// ExecStdin checks `exec -i` without a terminal: stdin reaches the remote
// command, its stdout and stderr come back apart, and so does its exit code.
func ExecStdin(t *testing.T, start Starter, pod string) {
	p := start(t, strings.NewReader("line one\nline two\n"), nil, "exec", "-i", pod, "--", "sh", "-c", "cat; echo to-stderr >&2; exit 4")
	if code := p.Wait(t); code != 4 || p.Out.String() != "line one\nline two\n" || p.Err.String() != "to-stderr\n" {
		t.Fatalf("exec -i: exit %d, stdout %q, stderr %q", code, p.Out.String(), p.Err.String())
	}
}

// ClosedClient runs `exec -it <pod> -- sh -c "...; exec <marker>"` on a
// terminal and closes the terminal (SIGHUP) once the remote runs:
// actorletctl ends with 130. What happens to the remote is the caller's to
// check.
func ClosedClient(t *testing.T, start Starter, pod, marker string) {
	p := start(t, nil, &pty.Winsize{Rows: 24, Cols: 80}, "exec", "-it", pod, "--", "sh", "-c", "echo remote-ready; exec "+marker)
	p.WaitOut(t, "remote-ready")
	_ = p.Cmd.Process.Signal(syscall.SIGHUP) // the terminal was closed
	if code := p.Wait(t); code != 130 {
		t.Errorf("actorletctl exited %d after SIGHUP, want 130", code)
	}
}

// Attach checks `attach` to ticking (a container printing "tick" lines):
// its output arrives, Ctrl-C ends the attach with 130; and `attach -i` to
// echoing (a stdin/stdinOnce container echoing "echo:<line>" until its
// stdin ends, then "bye"): what we send reaches it and its stdin closes
// when ours does.
func Attach(t *testing.T, start Starter, ticking, echoing string) {
	p := start(t, nil, nil, "attach", ticking)
	p.WaitOut(t, "tick\ntick\n")
	_ = p.Cmd.Process.Signal(syscall.SIGINT)
	if code := p.Wait(t); code != 130 {
		t.Errorf("attach exited %d after Ctrl-C, want 130; stderr %q", code, p.Err.String())
	}
	p = start(t, strings.NewReader("hello\n"), nil, "attach", "-i", echoing)
	p.WaitOut(t, "echo:hello")
	p.WaitOut(t, "bye")
	_ = p.Cmd.Process.Signal(syscall.SIGINT)
	p.Wait(t)
}

// AttachOnPty checks `attach -it` to pod (a stdin/tty container running a
// shell) on a terminal of 40x120: the container's terminal takes that size,
// and the shell's exit ends the attach with 0.
func AttachOnPty(t *testing.T, start Starter, pod string) {
	p := start(t, nil, &pty.Winsize{Rows: 40, Cols: 120}, "attach", "-it", pod)
	p.Write(t, `while [ "$(stty size)" != "40 120" ]; do sleep 0.1; done; echo "attached-$((40+2))"`+"\r")
	p.WaitOut(t, "attached-42")
	p.Write(t, "exit 0\r") // the container's shell ends, and with it the attach
	if code := p.Wait(t); code != 0 {
		t.Fatalf("attach -it exited %d; output:\n%s", code, p.Out.String())
	}
}
