// Package cristream is a client of the CRI streaming protocol for tests,
// as crictl is: a session on the URL an Exec or Attach call returned
// (SPDY, client-go's remotecommand), a terminal session typed into line by
// line, and a port forwarder on a PortForward URL.
package cristream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/actorlet/actorlet/test/testutil"
)

// Stream runs a session on a streaming URL with opts and returns how it
// ended (an exit code other than 0 is an error; see ExitCode). A session
// still open after 30 s is canceled.
func Stream(t testing.TB, rawURL string, opts remotecommand.StreamOptions) error {
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

// ExitCode is the remote exit code in a session's error (0 for nil); any
// other error fails t.
func ExitCode(t testing.TB, err error) int {
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

// oneSize sends one terminal size, then no more resizes.
type oneSize chan remotecommand.TerminalSize

func (q oneSize) Next() *remotecommand.TerminalSize {
	s, ok := <-q
	if !ok {
		return nil
	}
	return &s
}

// Terminal is a session with a tty, as crictl exec -it and attach -it run
// one: the test types lines and reads what the terminal shows.
type Terminal struct {
	Out  testutil.SyncBuffer // everything the terminal showed
	in   *io.PipeWriter
	done chan error
}

// OpenTerminal starts a tty session on a streaming URL that sends size as
// the terminal's size (nil: none). t.Cleanup closes its input.
func OpenTerminal(t testing.TB, rawURL string, size *remotecommand.TerminalSize) *Terminal {
	t.Helper()
	inR, inW := io.Pipe()
	term := &Terminal{in: inW, done: make(chan error, 1)}
	opts := remotecommand.StreamOptions{Stdin: inR, Stdout: &term.Out, Tty: true}
	if size != nil {
		sizes := make(oneSize, 1)
		sizes <- *size
		close(sizes)
		opts.TerminalSizeQueue = sizes
	}
	go func() { term.done <- Stream(t, rawURL, opts) }()
	t.Cleanup(term.Close)
	return term
}

// TypeUntil types line (again every poll: a shell may not read yet) until
// the terminal shows every one of want. The terminal echoes what is typed:
// want should be the command's result, not its text.
func (term *Terminal) TypeUntil(t testing.TB, line string, want ...string) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, func() error {
		if _, err := io.WriteString(term.in, line+"\n"); err != nil {
			return err
		}
		for _, w := range want {
			if !strings.Contains(term.Out.String(), w) {
				return fmt.Errorf("terminal so far %q", term.Out.String())
			}
		}
		return nil
	})
}

// Type types line once.
func (term *Terminal) Type(line string) { _, _ = io.WriteString(term.in, line+"\n") }

// Close closes the session's input, as a client that goes away does.
func (term *Terminal) Close() { _ = term.in.Close() }

// Done delivers how the session ended (see Stream).
func (term *Terminal) Done() <-chan error { return term.done }

// PortForward starts client-go's port forwarder on a streaming URL to
// remote port and returns the local port; it stops with the test.
func PortForward(t testing.TB, rawURL string, port int) int {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("streaming URL %q: %v", rawURL, err)
	}
	transport, upgrader, err := spdy.RoundTripperFor(&restclient.Config{})
	if err != nil {
		t.Fatalf("RoundTripperFor: %v", err)
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	stop, ready := make(chan struct{}), make(chan struct{})
	pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatalf("portforward: %v", err)
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
