package commands

import (
	"bufio"
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/node/commands/commandstest"
	"github.com/actorlet/actorlet/test/testutil"
)

type sessionEnv struct {
	nc     *nats.Conn
	svc    *Service
	host   *commandstest.HostStreams
	client *wire.Client
}

func newSessionEnv(t *testing.T, opts SessionOptions) *sessionEnv {
	t.Helper()
	nc := runNATS(t)
	host := commandstest.StartHostStreams(t)
	node := &streamNode{fakeNode: &fakeNode{}, rt: host.Runtime()}
	node.setPods(streamPod())
	svc := startService(t, nc, node, ServiceOptions{Sessions: opts})
	t.Cleanup(func() {
		testutil.Until(t, 10*time.Second, "processes left running", func() bool { return host.Processes() == 0 })
	})
	return &sessionEnv{nc: nc, svc: svc, host: host, client: &wire.Client{NC: nc, Timeout: 5 * time.Second}}
}

func (e *sessionEnv) openSessions() int {
	e.svc.sessions.mu.Lock()
	defer e.svc.sessions.mu.Unlock()
	return len(e.svc.sessions.open)
}

func (e *sessionEnv) open(t *testing.T, verb string, req wire.SessionRequest) *wire.Session {
	t.Helper()
	req.Name = "web"
	s, err := e.client.OpenSession(context.Background(), "n1", verb, req)
	if err != nil {
		t.Fatalf("open %s: %v", verb, err)
	}
	return s
}

func TestSessionExecStreams(t *testing.T) {
	e := newSessionEnv(t, SessionOptions{})
	s := e.open(t, wire.VerbStreamExec, wire.SessionRequest{Command: []string{"sh", "-c", "cat; echo oops >&2; exit 3"}, Stdin: true})
	var out, errOut testutil.SyncBuffer
	end, err := s.Run(context.Background(), wire.StreamOptions{Stdin: strings.NewReader("hello\n"), Stdout: &out, Stderr: &errOut})
	if err != nil {
		t.Fatal(err)
	}
	if end.ExitCode != 3 || end.Reason != wire.SessionEndExited || out.String() != "hello\n" || errOut.String() != "oops\n" {
		t.Fatalf("end %+v, stdout %q, stderr %q; want exit 3, hello, oops", end, out.String(), errOut.String())
	}
	testutil.Until(t, 5*time.Second, "session released after its end was read", func() bool { return e.openSessions() == 0 })
}

func TestSessionExecTTYResize(t *testing.T) {
	e := newSessionEnv(t, SessionOptions{})
	s := e.open(t, wire.VerbStreamExec, wire.SessionRequest{
		Command: []string{"sh", "-c", `while [ "$(stty size)" = "0 0" ]; do sleep 0.05; done; stty size; while [ "$(stty size)" = "24 80" ]; do sleep 0.05; done; stty size; read line; echo "got $line"; exit 7`},
		Stdin:   true, TTY: true, Width: 80, Height: 24,
	})
	inR, inW := io.Pipe()
	defer inW.Close()
	sizes := make(chan wire.TerminalSize, 1)
	var out testutil.SyncBuffer
	type result struct {
		end *wire.SessionEnd
		err error
	}
	done := make(chan result, 1)
	go func() {
		end, err := s.Run(context.Background(), wire.StreamOptions{Stdin: inR, Stdout: &out, Resize: sizes})
		done <- result{end, err}
	}()
	out.WaitFor(t, 10*time.Second, "24 80")
	sizes <- wire.TerminalSize{Width: 100, Height: 30}
	out.WaitFor(t, 10*time.Second, "30 100")
	_, _ = inW.Write([]byte("x\n"))
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.end.ExitCode != 7 || !strings.Contains(out.String(), "30 100") || !strings.Contains(out.String(), "got x") {
		t.Fatalf("end %+v, output %q; want exit 7, size 30 100 and got x", r.end, out.String())
	}
}

func TestSessionAttach(t *testing.T) {
	e := newSessionEnv(t, SessionOptions{})
	s := e.open(t, wire.VerbStreamAttach, wire.SessionRequest{Stdin: true})
	var out testutil.SyncBuffer
	end, err := s.Run(context.Background(), wire.StreamOptions{Stdin: strings.NewReader("attached\n"), Stdout: &out})
	if err != nil || end.ExitCode != 0 || out.String() != "attached\n" {
		t.Fatalf("attach: end %+v, err %v, output %q", end, err, out.String())
	}
}

func TestSessionPortForward(t *testing.T) {
	e := newSessionEnv(t, SessionOptions{})
	port := testutil.ServeTCP(t, func(c net.Conn) {
		line, _ := bufio.NewReader(c).ReadString('\n')
		_, _ = c.Write([]byte(strings.ToUpper(line)))
	})
	for i := range 3 { // one session per connection, as the CLI does
		s := e.open(t, wire.VerbStreamPortForward, wire.SessionRequest{Port: int32(port)})
		var out testutil.SyncBuffer
		msg := "ping " + strconv.Itoa(i) + "\n"
		end, err := s.Run(context.Background(), wire.StreamOptions{Stdin: strings.NewReader(msg), Stdout: &out})
		if err != nil || end.Reason != wire.SessionEndExited || out.String() != strings.ToUpper(msg) {
			t.Fatalf("port-forward %d: end %+v, err %v, got %q", i, end, err, out.String())
		}
	}
	// A port nobody listens on: the runtime's error reaches the client.
	s := e.open(t, wire.VerbStreamPortForward, wire.SessionRequest{Port: 1})
	end, err := s.Run(context.Background(), wire.StreamOptions{Stdin: strings.NewReader(""), Stdout: io.Discard})
	if err != nil || end.Reason != wire.SessionEndError || end.Error == "" {
		t.Fatalf("port-forward to a closed port: end %+v, err %v; want an error end", end, err)
	}
}

// A producer faster than the client waits: the node holds at most Buffer
// bytes of its output, and everything arrives once the client reads.
func TestSessionFlowControl(t *testing.T) {
	const total = 8 << 20
	e := newSessionEnv(t, SessionOptions{Buffer: 64 << 10, MaxFrameBytes: 16 << 10})
	s := e.open(t, wire.VerbStreamExec, wire.SessionRequest{Command: []string{"head", "-c", strconv.Itoa(total), "/dev/zero"}})
	ss := e.svc.sessions.get(s.ID())
	buffered := func() int {
		ss.mu.Lock()
		defer ss.mu.Unlock()
		return ss.outBytes
	}
	testutil.Until(t, 10*time.Second, "the session's buffer to fill", func() bool { return buffered() == 64<<10 })
	if n := e.host.Processes(); n != 1 {
		t.Fatalf("%d producers running while nobody reads, want 1 (blocked)", n)
	}
	if b := buffered(); b > 64<<10 {
		t.Fatalf("node buffers %d bytes, limit %d", b, 64<<10)
	}
	var n countWriter
	end, err := s.Run(context.Background(), wire.StreamOptions{Stdout: &n})
	if err != nil || end.ExitCode != 0 || n.n != total {
		t.Fatalf("end %+v, err %v, %d bytes; want exit 0 and %d bytes", end, err, n.n, total)
	}
}

type countWriter struct{ n int }

func (c *countWriter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }

// A client that stops reading (killed, partitioned) loses its session after
// ClientTimeout, and the remote command is stopped.
func TestSessionClientGone(t *testing.T) {
	e := newSessionEnv(t, SessionOptions{Poll: 50 * time.Millisecond, ClientTimeout: 300 * time.Millisecond})
	s := e.open(t, wire.VerbStreamExec, wire.SessionRequest{Command: []string{"sleep", "600"}, Stdin: true, TTY: true})
	testutil.Until(t, 5*time.Second, "the command to start", func() bool { return e.host.Processes() == 1 })
	testutil.Until(t, 10*time.Second, "the session of a silent client to be closed", func() bool { return e.openSessions() == 0 })
	testutil.Until(t, 10*time.Second, "the remote command to stop", func() bool { return e.host.Processes() == 0 })
	if _, err := s.Request(context.Background(), wire.SessionOpRead, nil, nil, 2*time.Second); !wire.IsNotFound(err) {
		t.Fatalf("read after the session was closed: %v, want 404", err)
	}
}

// Canceling Run (Ctrl-C without a tty, the CLI exiting) closes the session
// at once and stops the remote.
func TestSessionClientClose(t *testing.T) {
	e := newSessionEnv(t, SessionOptions{})
	s := e.open(t, wire.VerbStreamExec, wire.SessionRequest{Command: []string{"sh", "-c", "echo started; exec sleep 600"}, Stdin: true, TTY: true})
	ctx, cancel := context.WithCancel(context.Background())
	var out testutil.SyncBuffer
	done := make(chan error, 1)
	go func() { _, err := s.Run(ctx, wire.StreamOptions{Stdout: &out}); done <- err }()
	out.WaitFor(t, 10*time.Second, "started")
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("Run after cancel = %v, want context.Canceled", err)
	}
	testutil.Until(t, 10*time.Second, "session and command gone after close", func() bool { return e.openSessions() == 0 && e.host.Processes() == 0 })
}

func TestSessionIdleTimeout(t *testing.T) {
	e := newSessionEnv(t, SessionOptions{Poll: 50 * time.Millisecond, IdleTimeout: 300 * time.Millisecond})
	s := e.open(t, wire.VerbStreamExec, wire.SessionRequest{Command: []string{"cat"}, Stdin: true})
	in, _ := io.Pipe() // input that never comes
	end, err := s.Run(context.Background(), wire.StreamOptions{Stdin: in, Stdout: io.Discard})
	if err != nil || end.Reason != wire.SessionEndIdle || end.ExitCode == 0 {
		t.Fatalf("end %+v, err %v; want idle timeout with a non-zero code", end, err)
	}
}

// A lost answer to a read is asked for again with the same ack and comes
// back the same; acknowledging it moves on.
func TestSessionReadResend(t *testing.T) {
	e := newSessionEnv(t, SessionOptions{})
	s := e.open(t, wire.VerbStreamExec, wire.SessionRequest{Command: []string{"echo", "once"}})
	read := func(ack int) *nats.Msg {
		t.Helper()
		h := nats.Header{}
		h.Set(wire.HeaderAck, strconv.Itoa(ack))
		m, err := s.Request(context.Background(), wire.SessionOpRead, h, nil, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	first := read(0)
	again := read(0)
	if first.Header.Get(wire.HeaderSeq) != "1" || again.Header.Get(wire.HeaderSeq) != "1" || string(again.Data) != string(first.Data) {
		t.Fatalf("resend: %v %q, then %v %q", first.Header, first.Data, again.Header, again.Data)
	}
	last := read(1)
	for last.Header.Get(wire.HeaderEnd) == "" {
		last = read(1) // an empty poll answer while the command ends
	}
	if last.Header.Get(wire.HeaderSeq) != "2" || last.Header.Get(wire.HeaderExitCode) != "0" {
		t.Fatalf("last frame %v", last.Header)
	}
	s.Close()
}

func TestSessionLimitsAndBadInput(t *testing.T) {
	e := newSessionEnv(t, SessionOptions{MaxSessions: 1, MaxFrameBytes: 1024})
	ctx := context.Background()
	s := e.open(t, wire.VerbStreamExec, wire.SessionRequest{Command: []string{"cat"}, Stdin: true})
	defer s.Close()

	open := func(verb string, r wire.SessionRequest) error {
		_, err := e.client.OpenSession(ctx, "n1", verb, r)
		return err
	}
	cases := []struct {
		what string
		err  error
		code int
		in   string
	}{
		{"beyond the session limit", open(wire.VerbStreamExec, wire.SessionRequest{Name: "web", Command: []string{"true"}}), wire.CodeTooMany, "limit 1"},
		{"no command", open(wire.VerbStreamExec, wire.SessionRequest{Name: "web"}), wire.CodeBadRequest, "command"},
		{"too many arguments", open(wire.VerbStreamExec, wire.SessionRequest{Name: "web", Command: make([]string, wire.MaxSessionCommandArgs+1)}), wire.CodeBadRequest, "arguments"},
		{"huge argument", open(wire.VerbStreamExec, wire.SessionRequest{Name: "web", Command: []string{strings.Repeat("x", wire.MaxSessionCommandBytes+1)}}), wire.CodeBadRequest, "bytes"},
		{"port 0", open(wire.VerbStreamPortForward, wire.SessionRequest{Name: "web"}), wire.CodeBadRequest, "port"},
		{"port 70000", open(wire.VerbStreamPortForward, wire.SessionRequest{Name: "web", Port: 70000}), wire.CodeBadRequest, "port"},
		{"huge terminal", open(wire.VerbStreamExec, wire.SessionRequest{Name: "web", Command: []string{"sh"}, TTY: true, Width: 60000, Height: 1}), wire.CodeBadRequest, "terminal"},
		{"no name", open(wire.VerbStreamAttach, wire.SessionRequest{}), wire.CodeBadRequest, "name"},
	}
	for _, c := range cases {
		if wire.ErrorCode(c.err) != c.code || !strings.Contains(c.err.Error(), c.in) {
			t.Errorf("%s: %v, want code %d mentioning %q", c.what, c.err, c.code, c.in)
		}
	}

	hdr := func(k, v string) nats.Header { h := nats.Header{}; h.Set(k, v); return h }
	if _, err := s.Request(ctx, wire.SessionOpStdin, hdr(wire.HeaderSeq, "1"), make([]byte, 1025), 5*time.Second); wire.ErrorCode(err) != wire.CodeBadRequest {
		t.Errorf("oversized stdin frame: %v, want 400", err)
	}
	if _, err := s.Request(ctx, wire.SessionOpStdin, hdr(wire.HeaderSeq, "5"), []byte("x"), 5*time.Second); wire.ErrorCode(err) != wire.CodeBadRequest {
		t.Errorf("stdin frame out of order: %v, want 400", err)
	}
	if _, err := s.Request(ctx, wire.SessionOpRead, hdr(wire.HeaderAck, "-1"), nil, 5*time.Second); wire.ErrorCode(err) != wire.CodeBadRequest {
		t.Errorf("bad ack: %v, want 400", err)
	}
	if _, err := s.Request(ctx, wire.SessionOpResize, nil, []byte(`{"width":80,"height":24}`), 5*time.Second); wire.ErrorCode(err) != wire.CodeBadRequest {
		t.Errorf("resize without a tty: %v, want 400", err)
	}
	if _, err := s.Request(ctx, "bogus", nil, nil, 5*time.Second); wire.ErrorCode(err) != wire.CodeBadRequest {
		t.Errorf("unknown op: %v, want 400", err)
	}
	// Another client (another inbox) that learned the session ID gets
	// nothing: the session answers only its opener's inbox.
	other, err := nats.Connect(e.nc.ConnectedUrl())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	stolen := wire.SessionFor(other, "n1", s.Response())
	if _, err := stolen.Request(ctx, wire.SessionOpStdin, hdr(wire.HeaderSeq, "1"), []byte("rm -rf /\n"), 5*time.Second); !wire.IsNotFound(err) {
		t.Errorf("stdin from another inbox: %v, want 404", err)
	}
	if _, err := stolen.Request(ctx, wire.SessionOpClose, nil, nil, 5*time.Second); !wire.IsNotFound(err) || e.openSessions() != 1 {
		t.Errorf("close from another inbox: %v (sessions %d), want 404 and the session kept", err, e.openSessions())
	}
	// A raw message without a reply subject is ignored, the session lives.
	_ = e.nc.Publish(wire.SessionSubject("n1", s.ID(), wire.SessionOpClose), nil)
	_ = e.nc.Flush()
	if e.openSessions() != 1 {
		t.Error("a close without reply subject closed the session")
	}
}

func TestSessionErrors(t *testing.T) {
	nc := runNATS(t)
	startService(t, nc, &fakeNode{}, ServiceOptions{})
	c := &wire.Client{NC: nc, Timeout: 5 * time.Second}
	_, err := c.OpenSession(context.Background(), "n1", wire.VerbStreamExec, wire.SessionRequest{Name: "web", Command: []string{"sh"}})
	if wire.ErrorCode(err) != wire.CodeNotImplemented {
		t.Fatalf("stream on a node that cannot: %v, want 501", err)
	}

	e := newSessionEnv(t, SessionOptions{})
	for _, c := range []struct {
		what string
		verb string
		req  wire.SessionRequest
		code int
	}{
		{"unknown pod", wire.VerbStreamExec, wire.SessionRequest{Name: "nope", Command: []string{"sh"}}, wire.CodeNotFound},
		{"unknown container", wire.VerbStreamExec, wire.SessionRequest{Name: "web", Container: "nope", Command: []string{"sh"}}, wire.CodeNotFound},
	} {
		if _, err := e.client.OpenSession(context.Background(), "n1", c.verb, c.req); wire.ErrorCode(err) != c.code {
			t.Errorf("%s: %v, want %d", c.what, err, c.code)
		}
	}
	// Attach with stdin to a container created without stdin.
	e2 := newSessionEnv(t, SessionOptions{})
	p := testPod("default", "plain", "u2", "app")
	e2.svc.node.(*streamNode).setPods(p)
	if _, err := e2.client.OpenSession(context.Background(), "n1", wire.VerbStreamAttach, wire.SessionRequest{Name: "plain", Stdin: true}); wire.ErrorCode(err) != wire.CodeBadRequest || !strings.Contains(err.Error(), "stdin") {
		t.Errorf("attach -i to a container without stdin: %v, want 400", err)
	}
	if e.openSessions() != 0 || e2.openSessions() != 0 {
		t.Error("failed opens left sessions behind")
	}
}

// A client on its own inbox prefix (least-privilege accounts give each
// user one) runs sessions the same way: the node only answers requests.
func TestSessionCustomInboxPrefix(t *testing.T) {
	e := newSessionEnv(t, SessionOptions{})
	nc, err := nats.Connect(e.nc.ConnectedUrl(), nats.CustomInboxPrefix("_INBOX_ops.alice"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := &wire.Client{NC: nc, Timeout: 5 * time.Second}
	s, err := c.OpenSession(context.Background(), "n1", wire.VerbStreamExec, wire.SessionRequest{Name: "web", Command: []string{"echo", "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if owner := e.svc.sessions.get(s.ID()).owner; !strings.HasPrefix(owner, "_INBOX_ops.alice.") {
		t.Fatalf("session bound to %q, want the client's inbox _INBOX_ops.alice.*", owner)
	}
	var out testutil.SyncBuffer
	end, err := s.Run(context.Background(), wire.StreamOptions{Stdout: &out})
	if err != nil || end.ExitCode != 0 || out.String() != "hi\n" {
		t.Fatalf("end %+v, err %v, out %q", end, err, out.String())
	}
}

// BenchmarkSessionOutput measures output through a session: a command
// writing 32 MiB, read by the client over the bus (SetBytes: MB/s).
func BenchmarkSessionOutput(b *testing.B) {
	const total = 32 << 20
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		b.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(5 * time.Second) {
		b.Fatal("nats server not ready")
	}
	defer srv.Shutdown()
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	host := commandstest.StartHostStreams(b)
	node := &streamNode{fakeNode: &fakeNode{}, rt: host.Runtime()}
	node.setPods(streamPod())
	svc, err := StartService(nc, node, ServiceOptions{NodeName: "n1"})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = svc.Stop() }()
	c := &wire.Client{NC: nc, Timeout: 5 * time.Second}
	b.SetBytes(total)
	for b.Loop() {
		s, err := c.OpenSession(context.Background(), "n1", wire.VerbStreamExec, wire.SessionRequest{Name: "web", Command: []string{"head", "-c", strconv.Itoa(total), "/dev/zero"}})
		if err != nil {
			b.Fatal(err)
		}
		var n countWriter
		if end, err := s.Run(context.Background(), wire.StreamOptions{Stdout: &n}); err != nil || end.ExitCode != 0 || n.n != total {
			b.Fatalf("end %+v, err %v, %d bytes", end, err, n.n)
		}
	}
}
