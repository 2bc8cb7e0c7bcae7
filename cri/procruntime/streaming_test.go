package procruntime_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	utilexec "k8s.io/client-go/util/exec"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/test/testutil"
)

// stream runs a remotecommand session on a CRI streaming URL as crictl
// and the kubelet do.
func stream(t *testing.T, rawURL string, opts remotecommand.StreamOptions) error {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("streaming URL %q: %v", rawURL, err)
	}
	exe, err := remotecommand.NewSPDYExecutor(&restclient.Config{}, http.MethodPost, u)
	if err != nil {
		t.Fatalf("NewSPDYExecutor: %v", err)
	}
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return exe.StreamWithContext(c, opts)
}

// exitCode is the remote exit code in a stream error (0 for nil).
func exitCode(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	var ee utilexec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("stream error %v is not an exit code", err)
	}
	return ee.ExitStatus()
}

// sizeQueue feeds terminal sizes to a tty session.
type sizeQueue chan remotecommand.TerminalSize

func (q sizeQueue) Next() *remotecommand.TerminalSize {
	s, ok := <-q
	if !ok {
		return nil
	}
	return &s
}

func TestStreamingExec(t *testing.T) {
	e := newEnv(t)
	sb, sbc := e.runSandbox("exec", nil)
	id := e.run(sb, sbc, containerConfig("main", nil, "sleep", "60"))
	rs := e.rawRuntime()

	t.Run("stdout, stderr and exit code", func(t *testing.T) {
		resp, err := rs.Exec(ctx(t), &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"sh", "-c", "echo out $GREETING; echo err >&2; exit 3"}, Stdout: true, Stderr: true})
		if err != nil {
			t.Fatalf("Exec: %v", err)
		}
		var out, errb bytes.Buffer
		err = stream(t, resp.Url, remotecommand.StreamOptions{Stdout: &out, Stderr: &errb})
		if code := exitCode(t, err); code != 3 {
			t.Errorf("exit code %d, want 3", code)
		}
		if out.String() != "out hello\n" || errb.String() != "err\n" {
			t.Errorf("stdout %q stderr %q", out.String(), errb.String())
		}
	})

	t.Run("stdin", func(t *testing.T) {
		resp, err := rs.Exec(ctx(t), &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"cat"}, Stdin: true, Stdout: true})
		if err != nil {
			t.Fatalf("Exec: %v", err)
		}
		var out bytes.Buffer
		if err := stream(t, resp.Url, remotecommand.StreamOptions{Stdin: strings.NewReader("ping\n"), Stdout: &out}); err != nil {
			t.Fatalf("stream: %v", err)
		}
		if out.String() != "ping\n" {
			t.Errorf("stdout %q, want ping", out.String())
		}
	})

	t.Run("tty with resize", func(t *testing.T) {
		resp, err := rs.Exec(ctx(t), &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"sh"}, Stdin: true, Stdout: true, Tty: true})
		if err != nil {
			t.Fatalf("Exec: %v", err)
		}
		sizes := make(sizeQueue, 1)
		sizes <- remotecommand.TerminalSize{Width: 123, Height: 45}
		inR, inW := io.Pipe()
		out := &testutil.SyncBuffer{}
		done := make(chan error, 1)
		go func() {
			done <- stream(t, resp.Url, remotecommand.StreamOptions{Stdin: inR, Stdout: out, Tty: true, TerminalSizeQueue: sizes})
		}()
		// The shell sees a terminal of the size sent; its exit code comes back.
		testutil.Eventually(t, 10*time.Second, func() error {
			if _, err := io.WriteString(inW, "test -t 0 && stty size\n"); err != nil {
				return err
			}
			if !strings.Contains(out.String(), "45 123") {
				return fmt.Errorf("output so far %q", out.String())
			}
			return nil
		})
		_, _ = io.WriteString(inW, "exit 7\n")
		close(sizes)
		if code := exitCode(t, <-done); code != 7 {
			t.Errorf("exit code %d, want 7; terminal: %q", code, out.String())
		}
		inW.Close()
	})

	t.Run("refused", func(t *testing.T) {
		if _, err := rs.Exec(ctx(t), &runtimeapi.ExecRequest{ContainerId: id, Stdout: true}); err == nil {
			t.Error("Exec with no command succeeded")
		}
		long := strings.Split(strings.Repeat("x ", 5000), " ")
		if _, err := rs.Exec(ctx(t), &runtimeapi.ExecRequest{ContainerId: id, Cmd: long, Stdout: true}); err == nil || !strings.Contains(err.Error(), "limit") {
			t.Errorf("Exec with 5000 arguments: %v, want a limit error", err)
		}
		if _, err := rs.Exec(ctx(t), &runtimeapi.ExecRequest{ContainerId: "nope", Cmd: []string{"true"}, Stdout: true}); err == nil {
			t.Error("Exec in an unknown container succeeded")
		}
	})
}

func TestStreamingAttach(t *testing.T) {
	e := newEnv(t)
	sb, sbc := e.runSandbox("attach", nil)
	rs := e.rawRuntime()

	t.Run("stdin pipe", func(t *testing.T) {
		cfg := containerConfig("cat", nil, "sh", "-c", "echo ready; while read l; do echo got $l; echo err $l >&2; done; echo bye; exit 4")
		cfg.Stdin, cfg.StdinOnce = true, true
		id := e.run(sb, sbc, cfg)
		resp, err := rs.Attach(ctx(t), &runtimeapi.AttachRequest{ContainerId: id, Stdin: true, Stdout: true, Stderr: true})
		if err != nil {
			t.Fatalf("Attach: %v", err)
		}
		var out, errb bytes.Buffer
		// stdin_once: the session's stdin ending closes the container's.
		err = stream(t, resp.Url, remotecommand.StreamOptions{Stdin: strings.NewReader("a\nb\n"), Stdout: &out, Stderr: &errb})
		if err != nil {
			t.Fatalf("attach stream: %v", err)
		}
		if !strings.Contains(out.String(), "got a\ngot b\nbye\n") || errb.String() != "err a\nerr b\n" {
			t.Errorf("stdout %q stderr %q", out.String(), errb.String())
		}
		if st := e.waitExited(id); st.ExitCode != 4 {
			t.Errorf("exit code %d, want 4", st.ExitCode)
		}
		if logs := e.readLog(sbc, cfg); !strings.Contains(logs, "stdout F got b") || !strings.Contains(logs, "stderr F err a") {
			t.Errorf("log misses attached output:\n%s", logs)
		}
	})

	t.Run("tty", func(t *testing.T) {
		cfg := containerConfig("sh", nil, "sh")
		cfg.Stdin, cfg.Tty = true, true
		id := e.run(sb, sbc, cfg)
		if _, err := rs.Attach(ctx(t), &runtimeapi.AttachRequest{ContainerId: id, Stdin: true, Stdout: true}); err == nil {
			t.Error("Attach without tty to a tty container succeeded")
		}
		resp, err := rs.Attach(ctx(t), &runtimeapi.AttachRequest{ContainerId: id, Stdin: true, Stdout: true, Tty: true})
		if err != nil {
			t.Fatalf("Attach: %v", err)
		}
		sizes := make(sizeQueue, 1)
		sizes <- remotecommand.TerminalSize{Width: 100, Height: 30}
		inR, inW := io.Pipe()
		out := &testutil.SyncBuffer{}
		done := make(chan error, 1)
		go func() {
			done <- stream(t, resp.Url, remotecommand.StreamOptions{Stdin: inR, Stdout: out, Tty: true, TerminalSizeQueue: sizes})
		}()
		testutil.Eventually(t, 10*time.Second, func() error {
			if _, err := io.WriteString(inW, "stty size; tty\n"); err != nil {
				return err
			}
			if s := out.String(); !strings.Contains(s, "30 100") || !strings.Contains(s, "/dev/pts/") {
				return fmt.Errorf("output so far %q", s)
			}
			return nil
		})
		_, _ = io.WriteString(inW, "exit 5\n")
		close(sizes)
		if err := <-done; err != nil {
			t.Errorf("attach stream: %v", err)
		}
		inW.Close()
		if st := e.waitExited(id); st.ExitCode != 5 {
			t.Errorf("exit code %d, want 5", st.ExitCode)
		}
	})

	t.Run("refused", func(t *testing.T) {
		id := e.run(sb, sbc, containerConfig("nostdin", nil, "sleep", "60"))
		if _, err := rs.Attach(ctx(t), &runtimeapi.AttachRequest{ContainerId: id, Stdin: true, Stdout: true}); err == nil {
			t.Error("Attach with stdin to a container without stdin succeeded")
		}
		if _, err := rs.Attach(ctx(t), &runtimeapi.AttachRequest{ContainerId: "nope", Stdout: true}); err == nil {
			t.Error("Attach to an unknown container succeeded")
		}
	})
}

func TestStreamingPortForward(t *testing.T) {
	e := newEnv(t)
	sb, _ := e.runSandbox("pf", nil)
	rs := e.rawRuntime()

	// A server "in the pod" (the host's loopback, as the pod shares it).
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, io.TeeReader(c, io.Discard)) }()
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port

	resp, err := rs.PortForward(ctx(t), &runtimeapi.PortForwardRequest{PodSandboxId: sb, Port: []int32{int32(port)}})
	if err != nil {
		t.Fatalf("PortForward: %v", err)
	}
	local := portForward(t, resp.Url, port)
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", local))
	if err != nil {
		t.Fatalf("dial forwarded port: %v", err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "echo me"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len("echo me"))
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "echo me" {
		t.Errorf("read back %q, %v", buf, err)
	}

	if _, err := rs.PortForward(ctx(t), &runtimeapi.PortForwardRequest{PodSandboxId: sb, Port: []int32{70000}}); err == nil {
		t.Error("PortForward to port 70000 succeeded")
	}
	if _, err := rs.PortForward(ctx(t), &runtimeapi.PortForwardRequest{PodSandboxId: "nope", Port: []int32{80}}); err == nil {
		t.Error("PortForward to an unknown sandbox succeeded")
	}
}

// portForward starts client-go's port forwarder on a CRI streaming URL to
// remote port and returns the local port; it stops with the test.
func portForward(t *testing.T, rawURL string, port int) int {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	transport, upgrader, err := spdy.RoundTripperFor(&restclient.Config{})
	if err != nil {
		t.Fatal(err)
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	stop, ready := make(chan struct{}), make(chan struct{})
	pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- pf.ForwardPorts() }()
	t.Cleanup(func() { close(stop); <-done })
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("ForwardPorts: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("port forwarder not ready after 10s")
	}
	ports, err := pf.GetPorts()
	if err != nil || len(ports) != 1 {
		t.Fatalf("GetPorts: %v %v", ports, err)
	}
	return int(ports[0].Local)
}

// rawRuntime is a plain CRI runtime client on e's socket.
func (e *env) rawRuntime() runtimeapi.RuntimeServiceClient {
	e.t.Helper()
	conn, err := grpc.NewClient("unix://"+e.sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		e.t.Fatalf("grpc.NewClient: %v", err)
	}
	e.t.Cleanup(func() { _ = conn.Close() })
	return runtimeapi.NewRuntimeServiceClient(conn)
}

// readLog returns the CRI log of a container created with cfg in sb.
func (e *env) readLog(sb *runtimeapi.PodSandboxConfig, cfg *runtimeapi.ContainerConfig) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(sb.LogDirectory, cfg.LogPath))
	if err != nil {
		e.t.Fatalf("read log: %v", err)
	}
	return string(b)
}

// rawImages is a plain CRI image client on e's socket.
func (e *env) rawImages() runtimeapi.ImageServiceClient {
	e.t.Helper()
	conn, err := grpc.NewClient("unix://"+e.sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		e.t.Fatalf("grpc.NewClient: %v", err)
	}
	e.t.Cleanup(func() { _ = conn.Close() })
	return runtimeapi.NewImageServiceClient(conn)
}

// readCmdline is /proc/<pid>/cmdline with spaces between arguments.
func readCmdline(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " ")), err
}
