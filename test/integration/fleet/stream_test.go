package fleet

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/actorlet/actorlet/test/testutil"
)

// stream is a long-running actorletctl (logs -f, get pods -w), stopped by
// the test once it has seen what it waits for.
type stream struct {
	cmd    *exec.Cmd
	out    testutil.SyncBuffer
	errOut testutil.SyncBuffer
	cancel context.CancelFunc
	done   chan struct{}
}

// ctlStream starts actorletctl in the background; t.Cleanup stops it.
func (f *fleet) ctlStream(t *testing.T, args ...string) *stream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitFor)
	s := &stream{cancel: cancel, done: make(chan struct{})}
	s.cmd = exec.CommandContext(ctx, ctlBinary, append([]string{"--server", f.url(), "--creds", f.srv.AdminCreds(), "--timeout", "10s"}, args...)...)
	s.cmd.Stdout, s.cmd.Stderr = &s.out, &s.errOut
	if err := s.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start actorletctl %v: %v", args, err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(s.stop)
	return s
}

// stop kills the command (a bounded run) and waits for it.
func (s *stream) stop() {
	s.cancel()
	<-s.done
}

// exited reports whether the command ended on its own.
func (s *stream) exited() bool {
	select {
	case <-s.done:
		return true
	case <-time.After(0):
		return false
	}
}
