package procruntime_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/test/cristream"
	"github.com/actorlet/actorlet/test/testutil"
)

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
		err = cristream.Stream(t, resp.Url, remotecommand.StreamOptions{Stdout: &out, Stderr: &errb})
		if code := cristream.ExitCode(t, err); code != 3 {
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
		if err := cristream.Stream(t, resp.Url, remotecommand.StreamOptions{Stdin: strings.NewReader("ping\n"), Stdout: &out}); err != nil {
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
		term := cristream.OpenTerminal(t, resp.Url, &remotecommand.TerminalSize{Width: 123, Height: 45})
		// The shell sees a terminal of the size sent; its exit code comes back.
		term.TypeUntil(t, "test -t 0 && stty size", "45 123")
		term.Type("exit 7")
		if code := cristream.ExitCode(t, <-term.Done()); code != 7 {
			t.Errorf("exit code %d, want 7; terminal: %q", code, term.Out.String())
		}
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
		err = cristream.Stream(t, resp.Url, remotecommand.StreamOptions{Stdin: strings.NewReader("a\nb\n"), Stdout: &out, Stderr: &errb})
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
		term := cristream.OpenTerminal(t, resp.Url, &remotecommand.TerminalSize{Width: 100, Height: 30})
		term.TypeUntil(t, "stty size; tty", "30 100", "/dev/pts/")
		term.Type("exit 5")
		if err := <-term.Done(); err != nil {
			t.Errorf("attach stream: %v", err)
		}
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
	port := testutil.ServeTCP(t, func(c net.Conn) { _, _ = io.Copy(c, c) })

	resp, err := rs.PortForward(ctx(t), &runtimeapi.PortForwardRequest{PodSandboxId: sb, Port: []int32{int32(port)}})
	if err != nil {
		t.Fatalf("PortForward: %v", err)
	}
	local := cristream.PortForward(t, resp.Url, port)
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

// rawConn is a plain gRPC connection to e's socket, closed by t.Cleanup.
func (e *env) rawConn() *grpc.ClientConn {
	e.t.Helper()
	conn, err := grpc.NewClient("unix://"+e.sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		e.t.Fatalf("grpc.NewClient: %v", err)
	}
	e.t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// rawRuntime is a plain CRI runtime client on e's socket.
func (e *env) rawRuntime() runtimeapi.RuntimeServiceClient {
	return runtimeapi.NewRuntimeServiceClient(e.rawConn())
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
	return runtimeapi.NewImageServiceClient(e.rawConn())
}

// readCmdline is /proc/<pid>/cmdline with spaces between arguments.
func readCmdline(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " ")), err
}
