package main

import (
	"context"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
	testclock "k8s.io/utils/clock/testing"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/node/commands"
	"github.com/actorlet/actorlet/node/commands/commandstest"
	"github.com/actorlet/actorlet/test/cliproc"
	"github.com/actorlet/actorlet/test/testutil"
)

// streamCLINode is the cliNode whose pod streams through host processes
// served by the real CRI streaming server.
type streamCLINode struct {
	cliNode
	rt commandstest.StreamRuntime
}

func (n *streamCLINode) PrepareStream(ctx context.Context, verb string, r *wire.SessionRequest) (commands.StreamFunc, error) {
	if err := n.check(r.Namespace, r.Name); err != nil {
		return nil, err
	}
	p := n.pod()
	p.Status.ContainerStatuses[0].ContainerID = "proc://c1"
	return commands.PrepareStreamFor(ctx, n.rt, p, verb, r)
}

func echoOn(t *testing.T, f *os.File) bool {
	t.Helper()
	tio, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	return tio.Lflag&unix.ECHO != 0
}

// exec -it on a real pseudo-terminal: the local terminal goes raw and comes
// back, its size and resizes (SIGWINCH) reach the remote, Ctrl-C goes to the
// remote command, and the remote's exit code is actorletctl's.
func TestExecInteractiveOnPty(t *testing.T) {
	e := newEnv(t)
	host := commandstest.StartHostStreams(t)
	n := &streamCLINode{cliNode: cliNode{told: make(chan string, 4)}, rt: host.Runtime()}
	svc, err := commands.StartService(e.conn.NC, n, commands.ServiceOptions{NodeName: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	e.put(wire.StatusBucket, wire.StatusKey("n1", "default", "web"), n.pod())

	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 24, Cols: 80}); err != nil {
		t.Fatal(err)
	}
	if !echoOn(t, tty) {
		t.Fatal("a new terminal should echo")
	}
	var out testutil.SyncBuffer
	go func() { _, _ = io.Copy(&out, ptmx) }()
	c := &cli{stdin: tty, stdout: tty, stderr: tty, clock: testclock.NewFakeClock(now)}
	done := make(chan int, 1)
	go func() {
		done <- c.main(context.Background(), []string{"--server", e.url, "--timeout", "5s", "exec", "-it", "web", "--", "sh"})
	}()
	write := func(s string) {
		t.Helper()
		if _, err := ptmx.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}

	write(`while [ "$(stty size)" = "0 0" ]; do sleep 0.05; done; echo "size=$(stty size)"` + "\r")
	out.WaitFor(t, 20*time.Second, "size=24 80")
	if echoOn(t, tty) {
		t.Error("the local terminal is not raw during the session")
	}
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 30, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGWINCH) // what the kernel sends the terminal's foreground process
	write(`while [ "$(stty size)" = "24 80" ]; do sleep 0.05; done; echo "size=$(stty size)"` + "\r")
	out.WaitFor(t, 20*time.Second, "size=30 100")

	write("sleep 1919\r")
	cliproc.ProcessRuns(t, 20*time.Second, "sleep 1919")
	write("\x03") // Ctrl-C stops the remote sleep
	cliproc.ProcessGone(t, 20*time.Second, "sleep 1919")
	write("echo after-$((40+2))\r")
	out.WaitFor(t, 20*time.Second, "after-42")

	write("exit 3\r")
	select {
	case code := <-done:
		if code != 3 {
			t.Fatalf("exec -it exited %d, want the remote's 3", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("exec -it did not end after the remote shell exited")
	}
	if !echoOn(t, tty) {
		t.Error("the local terminal was not restored")
	}
	testutil.Until(t, 10*time.Second, "the node to free the session", func() bool { return svc.OpenSessions() == 0 })
}
