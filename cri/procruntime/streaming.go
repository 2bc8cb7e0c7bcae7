package procruntime

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming"
	remotecommandserver "k8s.io/cri-streaming/pkg/streaming/remotecommand"
	"k8s.io/klog/v2"
	utilexec "k8s.io/utils/exec"
)

// Streaming: Exec, Attach and PortForward answer a URL on the standard CRI
// streaming server (k8s.io/cri-streaming, what containerd and CRI-O use),
// served over HTTP on Options.StreamAddress; clients (crictl, the kubelet,
// client-go's remotecommand and portforward) connect there with SPDY or
// WebSockets.
//
//   - Exec runs the command beside the container (its environment and
//     working directory, its own process group), on a new pseudo-terminal
//     with tty. It is a child of the runtime: it ends with the session.
//   - Attach connects to the container's shim, which holds the container's
//     stdio (attach.go): output as it is produced, stdin if the container
//     was created with stdin, resize with tty.
//   - PortForward connects to the port on the sandbox's address (the host's
//     loopback: there is no network namespace).

const (
	// maxStreams bounds concurrent streaming sessions of all kinds.
	maxStreams = 64
	// maxExecArgs and maxExecArgBytes bound an exec's command line.
	maxExecArgs     = 4096
	maxExecArgBytes = 1 << 20
	// defaultStreamAddress is where the streaming server listens unless
	// Options.StreamAddress says otherwise.
	defaultStreamAddress = "127.0.0.1:0"
)

// streamServer is the HTTP streaming server of a Runtime.
type streamServer struct {
	srv      streaming.Server
	http     *http.Server
	listener net.Listener
	slots    chan struct{}
}

func (r *Runtime) newStreamServer(addr string) (*streamServer, error) {
	if addr == "" {
		addr = defaultStreamAddress
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("procruntime: streaming server: listen on %s: %w", addr, err)
	}
	cfg := streaming.DefaultConfig
	cfg.Addr = l.Addr().String()
	cfg.BaseURL = &url.URL{Scheme: "http", Host: l.Addr().String()}
	srv, err := streaming.NewServer(cfg, &streamRuntime{r: r})
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("procruntime: streaming server: %w", err)
	}
	s := &streamServer{
		srv:      srv,
		http:     &http.Server{Handler: srv, ReadHeaderTimeout: 30 * time.Second},
		listener: l,
		slots:    make(chan struct{}, maxStreams),
	}
	go func() {
		if err := s.http.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.ErrorS(err, "Process runtime streaming server stopped", "address", cfg.Addr)
		}
	}()
	return s, nil
}

func (s *streamServer) stop() {
	_ = s.http.Close()
}

// StreamAddress is the host:port of the streaming server.
func (r *Runtime) StreamAddress() string {
	return r.stream.listener.Addr().String()
}

func (r *Runtime) acquireStream() (func(), error) {
	select {
	case r.stream.slots <- struct{}{}:
		return func() { <-r.stream.slots }, nil
	default:
		return nil, fmt.Errorf("too many streaming sessions (limit %d)", maxStreams)
	}
}

// streamTo takes a streaming slot (acquireStream) for a session with the
// running container id (runningContainer; verb names the session in its
// errors). The caller calls release when the session ends; on an error
// nothing is held.
func (r *Runtime) streamTo(verb, id string) (*container, *sandbox, func(), error) {
	release, err := r.acquireStream()
	if err != nil {
		return nil, nil, nil, err
	}
	c, sb, err := r.runningContainer(verb, id)
	if err != nil {
		release()
		return nil, nil, nil, err
	}
	return c, sb, release, nil
}

// runningContainer returns a RUNNING container's config and sandbox.
func (r *Runtime) runningContainer(verb, id string) (*container, *sandbox, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := lookup(r.containers, "container", id)
	if err != nil {
		return nil, nil, err
	}
	if st := c.state(); st != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return nil, nil, status.Errorf(codes.FailedPrecondition, "%s container %q: container is %s, not RUNNING", verb, c.rec.ID, st)
	}
	return c, r.sandboxes[c.rec.SandboxID], nil
}

func validateCmd(cmd []string) error {
	if len(cmd) == 0 || cmd[0] == "" {
		return status.Error(codes.InvalidArgument, "cmd: must not be empty")
	}
	if len(cmd) > maxExecArgs {
		return status.Errorf(codes.InvalidArgument, "cmd: %d arguments, limit is %d", len(cmd), maxExecArgs)
	}
	n := 0
	for _, a := range cmd {
		n += len(a)
	}
	if n > maxExecArgBytes {
		return status.Errorf(codes.InvalidArgument, "cmd: %d bytes, limit is %d", n, maxExecArgBytes)
	}
	return nil
}

// Exec prepares a streaming exec and returns its URL.
func (r *Runtime) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	if err := validateCmd(req.GetCmd()); err != nil {
		return nil, err
	}
	if _, _, err := r.runningContainer("exec in", req.GetContainerId()); err != nil {
		return nil, err
	}
	resp, err := r.stream.srv.GetExec(req)
	if err != nil {
		return nil, streamError(err)
	}
	return resp, nil
}

// Attach prepares a streaming attach and returns its URL.
func (r *Runtime) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	c, _, err := r.runningContainer("attach to", req.GetContainerId())
	if err != nil {
		return nil, err
	}
	if req.GetStdin() && !c.config.GetStdin() {
		return nil, status.Errorf(codes.InvalidArgument, "attach to container %q: stdin: the container was not created with stdin", c.rec.ID)
	}
	if req.GetTty() != c.config.GetTty() {
		return nil, status.Errorf(codes.InvalidArgument, "attach to container %q: tty=%v, but the container was created with tty=%v", c.rec.ID, req.GetTty(), c.config.GetTty())
	}
	resp, err := r.stream.srv.GetAttach(req)
	if err != nil {
		return nil, streamError(err)
	}
	return resp, nil
}

// PortForward prepares a streaming port forward and returns its URL.
func (r *Runtime) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	r.mu.Lock()
	s, err := lookup(r.sandboxes, "sandbox", req.GetPodSandboxId())
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if !s.rec.Ready {
		return nil, status.Errorf(codes.FailedPrecondition, "port-forward to sandbox %q: sandbox is not ready", s.rec.ID)
	}
	for _, p := range req.GetPort() {
		if p <= 0 || p > 65535 {
			return nil, status.Errorf(codes.InvalidArgument, "port %d: must be in 1..65535", p)
		}
	}
	req.PodSandboxId = s.rec.ID
	resp, err := r.stream.srv.GetPortForward(req)
	if err != nil {
		return nil, streamError(err)
	}
	return resp, nil
}

// streamError keeps a gRPC status from the streaming server (it validates
// requests) and maps anything else to Internal.
func streamError(err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Error(codes.Internal, err.Error())
}

// streamRuntime is what the streaming server calls once a client connected.
type streamRuntime struct{ r *Runtime }

var _ streaming.Runtime = &streamRuntime{}

func orDiscard(w io.WriteCloser) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// Exec runs cmd beside the container until it exits or the client leaves
// (then its process group is killed). A non-zero exit is an ExitError
// carrying the code.
func (s *streamRuntime) Exec(ctx context.Context, id string, cmdline []string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommandserver.TerminalSize) error {
	c, sb, release, err := s.r.streamTo("exec in", id)
	if err != nil {
		return err
	}
	defer release()
	env := containerEnv(c.config, sb.config)
	if tty {
		env = withTerm(env)
	}
	path := cmdline[0]
	if !s.r.iso.mode.Filesystem { // in a view, the wrapper resolves it there
		if path, err = lookPathIn(cmdline[0], env); err != nil {
			return utilexec.CodeExitError{Err: err, Code: 127}
		}
	}
	dir := workingDir(c.config)
	cred, err := containerCredential(c.config)
	if err != nil {
		return err
	}
	w, err := s.r.wrapCommand(c.rec.ID, c.rec.SandboxID, dir, path, cmdline, tty, cred)
	if err != nil {
		return err
	}
	defer w.close()
	var direct *syscall.Credential
	if w.Path == path {
		direct = cred.sys()
	}
	cmd := exec.Command(w.Path)
	cmd.Args = w.Args
	cmd.Env = env
	cmd.ExtraFiles = w.Files
	if !w.Inside {
		cmd.Dir = dir
	}

	var ptmx *os.File
	var stdinW *os.File
	var copies sync.WaitGroup
	var inputDone chan struct{} // tty: the client's input ended
	var g *guardedPty           // tty: the terminal's master side
	if tty {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Credential: direct}
		ptmx, err = pty.Start(cmd)
		if err != nil {
			return fmt.Errorf("exec %q in container %q: %w", cmdline, c.rec.ID, err)
		}
		g = &guardedPty{f: ptmx}
		defer g.close()
		go func() {
			for size := range resize {
				g.setSize(size.Width, size.Height)
			}
		}()
		if in != nil {
			inputDone = make(chan struct{})
			go func() { _, _ = io.Copy(ptmx, in); close(inputDone) }()
		}
		copies.Add(1)
		go func() { defer copies.Done(); _, _ = io.Copy(orDiscard(out), ptmx) }()
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: direct}
		if in != nil {
			inR, inW, err := os.Pipe()
			if err != nil {
				return err
			}
			cmd.Stdin, stdinW = inR, inW
			defer inR.Close()
		}
		cmd.Stdout, cmd.Stderr = orDiscard(out), orDiscard(errw)
		cmd.WaitDelay = time.Second // a background child holding the pipes must not hang us
		if err := cmd.Start(); err != nil {
			if stdinW != nil {
				stdinW.Close()
			}
			return fmt.Errorf("exec %q in container %q: %w", cmdline, c.rec.ID, err)
		}
		if stdinW != nil {
			go func() {
				_, _ = io.Copy(stdinW, in)
				stdinW.Close()
			}()
		}
	}
	// The client leaving ends the command. The streaming server's context
	// is not canceled when a hijacked connection drops; on a terminal, the
	// end of the client's input (its stream closed) hangs the terminal up,
	// as closing a terminal window does, so a shell does not outlive its
	// session.
	waited := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		case <-inputDone:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGHUP)
			g.signalSession(syscall.SIGHUP)
		case <-waited:
		}
	}()
	err = cmd.Wait()
	close(waited)
	if tty {
		// The output copy ends when the terminal's last writer closed (EIO);
		// a background child still holding it is killed with the group.
		// Inside a pod's namespaces the command has a session of its own
		// (isolation.go) that the group kill misses: after a grace for the
		// output, that session is killed through the terminal.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		drained := make(chan struct{})
		go func() { copies.Wait(); close(drained) }()
		select {
		case <-drained:
		case <-time.After(drainTimeout):
			g.signalSession(syscall.SIGKILL)
			<-drained
		}
	}
	if stdinW != nil {
		stdinW.Close()
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &exitErr):
		code, _ := exitStatus(exitErr.ProcessState, nil)
		return utilexec.CodeExitError{Err: err, Code: int(code)}
	default:
		return fmt.Errorf("exec %q in container %q: %w", cmdline, c.rec.ID, err)
	}
}

// Attach streams the container's stdio through its shim's attach socket
// until the container exits or the client leaves.
func (s *streamRuntime) Attach(ctx context.Context, id string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommandserver.TerminalSize) error {
	c, _, release, err := s.r.streamTo("attach to", id)
	if err != nil {
		return err
	}
	defer release()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", attachSocketPath(s.r.opts.RootDir, c.rec.ID))
	if err != nil {
		return fmt.Errorf("attach to container %q: %w", c.rec.ID, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	var wmu sync.Mutex
	send := func(typ byte, p []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		return writeFrame(conn, typ, p)
	}
	if in != nil {
		go func() {
			buf := make([]byte, maxFrame)
			for {
				n, err := in.Read(buf)
				if n > 0 {
					if send(frameStdin, buf[:n]) != nil {
						return
					}
				}
				if err != nil {
					_ = send(frameStdinClose, nil)
					return
				}
			}
		}()
	}
	if resize != nil {
		go func() {
			for size := range resize {
				var p [4]byte
				binary.BigEndian.PutUint16(p[:2], size.Width)
				binary.BigEndian.PutUint16(p[2:], size.Height)
				if send(frameResize, p[:]) != nil {
					return
				}
			}
		}()
	}
	buf := make([]byte, maxFrame)
	for {
		typ, p, err := readFrame(conn, buf)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("attach to container %q: %w", c.rec.ID, err)
		}
		var w io.Writer
		switch {
		case typ == frameStdout, typ == frameStderr && tty:
			w = orDiscard(out)
		case typ == frameStderr:
			w = orDiscard(errw)
		default:
			continue
		}
		// The streaming server does not cancel ctx when the client's
		// connection drops: a failed write is how a gone client shows.
		if _, err := w.Write(p); err != nil {
			return nil
		}
	}
}

// PortForward copies between the stream and the port on the sandbox's
// address until either side ends.
func (s *streamRuntime) PortForward(ctx context.Context, sandboxID string, port int32, stream io.ReadWriteCloser) error {
	release, err := s.r.acquireStream()
	if err != nil {
		return err
	}
	defer release()
	if port <= 0 || port > 65535 {
		return fmt.Errorf("port %d: must be in 1..65535", port)
	}
	s.r.mu.Lock()
	sb, err := lookup(s.r.sandboxes, "sandbox", sandboxID)
	s.r.mu.Unlock()
	if err != nil {
		return err
	}
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := d.DialContext(dctx, "tcp", net.JoinHostPort(portForwardHost(s.r.opts.HostIP), strconv.Itoa(int(port))))
	cancel()
	if err != nil {
		return fmt.Errorf("connect to port %d of sandbox %s: %w", port, sb.rec.ID, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	go func() {
		_, _ = io.Copy(conn, stream)
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	_, err = io.Copy(stream, conn)
	conn.Close()
	// The copy from the client ends when the server closes the stream
	// after this returns; do not wait for it.
	if err != nil && !errors.Is(err, net.ErrClosed) && ctx.Err() == nil {
		return fmt.Errorf("port-forward to sandbox %q port %d: %w", sb.rec.ID, port, err)
	}
	return nil
}

// portForwardHost is where a sandbox's ports are reached: the loopback,
// since every sandbox shares the host's network.
func portForwardHost(hostIP string) string {
	if ip := net.ParseIP(hostIP); ip != nil && ip.To4() == nil {
		return "::1"
	}
	return "127.0.0.1"
}
