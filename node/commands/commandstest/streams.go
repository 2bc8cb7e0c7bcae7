// Package commandstest holds test helpers for the node's interactive
// sessions: a CRI streaming runtime that runs exec commands as host
// processes, served by the real CRI streaming server (k8s.io/cri-streaming),
// so tests dial it exactly as the node dials containerd's or the process
// runtime's. Only tests import it.
package commandstest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"sync"
	"syscall"
	"testing"

	"github.com/actorlet/actorlet/cri/procruntime"
	"github.com/creack/pty"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming"
	remotecommandserver "k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// HostStreams is a CRI streaming runtime for tests that runs exec commands
// as host processes (on a real pty with tty), attaches to `cat` and
// port-forwards to 127.0.0.1. It is served by the real CRI streaming server
// (k8s.io/cri-streaming), so the node dials it exactly as it dials
// containerd's or the process runtime's.
type HostStreams struct {
	srv streaming.Server

	mu      sync.Mutex
	running map[*exec.Cmd]struct{}
}

func StartHostStreams(t testing.TB) *HostStreams {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// The commands get every signal's default action, as in a pod, even
	// when the tests run under nohup: the end of a tty session hangs the
	// command up.
	procruntime.DefaultSignalsForChildren()
	h := &HostStreams{running: map[*exec.Cmd]struct{}{}}
	cfg := streaming.DefaultConfig
	cfg.Addr = l.Addr().String()
	cfg.BaseURL = &url.URL{Scheme: "http", Host: l.Addr().String()}
	h.srv, err = streaming.NewServer(cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h.srv}
	go func() { _ = hs.Serve(l) }()
	t.Cleanup(func() { _ = hs.Close() })
	return h
}

// Processes counts the commands still running.
func (h *HostStreams) Processes() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.running)
}

func (h *HostStreams) track(c *exec.Cmd, on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if on {
		h.running[c] = struct{}{}
	} else {
		delete(h.running, c)
	}
}

func (h *HostStreams) Exec(ctx context.Context, _ string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommandserver.TerminalSize) error {
	c := exec.CommandContext(ctx, cmd[0], cmd[1:]...)
	if !tty {
		c.Stdin, c.Stdout, c.Stderr = in, out, errw
		if err := c.Start(); err != nil {
			return err
		}
		h.track(c, true)
		defer h.track(c, false)
		return exitErr(c.Wait())
	}
	f, err := pty.Start(c)
	if err != nil {
		return err
	}
	var fmu sync.Mutex // f is closed only once no resize uses it
	closed := false
	defer func() {
		fmu.Lock()
		closed = true
		_ = f.Close()
		fmu.Unlock()
	}()
	h.track(c, true)
	defer h.track(c, false)
	go func() {
		for sz := range resize {
			fmu.Lock()
			if !closed {
				_ = pty.Setsize(f, &pty.Winsize{Cols: sz.Width, Rows: sz.Height})
			}
			fmu.Unlock()
		}
	}()
	if in != nil {
		// The input's end (the client closed, the stream dropped) hangs
		// the terminal up, as closing a terminal window does.
		go func() { _, _ = io.Copy(f, in); _ = c.Process.Signal(syscall.SIGHUP) }()
	}
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(out, f); close(copied) }()
	err = c.Wait()
	<-copied // the pty reports EIO once the process and its children are gone
	return exitErr(err)
}

func exitErr(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() >= 0 {
		return utilexec.CodeExitError{Err: err, Code: ee.ExitCode()}
	}
	return err
}

func (h *HostStreams) Attach(ctx context.Context, id string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommandserver.TerminalSize) error {
	return h.Exec(ctx, id, []string{"cat"}, in, out, errw, tty, resize)
}

func (h *HostStreams) PortForward(ctx context.Context, _ string, port int32, stream io.ReadWriteCloser) error {
	conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return err
	}
	defer conn.Close()
	go func() {
		_, _ = io.Copy(conn, stream)
		_ = conn.(*net.TCPConn).CloseWrite()
	}()
	_, err = io.Copy(stream, conn)
	return err
}

// Runtime is the CRI side of a HostStreams: the streaming URLs of its
// server, and one sandbox per pod UID. It satisfies commands.StreamingRuntime.
func (h *HostStreams) Runtime() StreamRuntime { return StreamRuntime{h.srv} }

// StreamRuntime adapts the streaming server to commands.StreamingRuntime.
type StreamRuntime struct{ srv streaming.Server }

func (r StreamRuntime) Exec(_ context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	return r.srv.GetExec(req)
}

func (r StreamRuntime) Attach(_ context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	return r.srv.GetAttach(req)
}

func (r StreamRuntime) PortForward(_ context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	return r.srv.GetPortForward(req)
}

func (r StreamRuntime) ListPodSandbox(_ context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return []*runtimeapi.PodSandbox{{Id: "sandbox-" + f.GetLabelSelector()["io.kubernetes.pod.uid"]}}, nil
}
