package commands

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/actorlet/actorlet/messages/wire"
)

// sessionWriter queues the runtime's output; it waits while the session
// holds Buffer bytes the client has not read.
type sessionWriter struct {
	ss     *session
	stream string
}

func (w *sessionWriter) Write(p []byte) (int, error) {
	ss := w.ss
	written := 0
	for written < len(p) {
		ss.mu.Lock()
		if ss.terminated != "" {
			ss.mu.Unlock()
			return written, io.ErrClosedPipe
		}
		room := ss.opts.Buffer - ss.outBytes
		if room <= 0 {
			ss.awaitChange(ss.ctx.Done())
			continue
		}
		n := min(room, len(p)-written)
		ss.out = append(ss.out, chunk{stream: w.stream, data: append([]byte(nil), p[written:written+n]...)})
		ss.outBytes += n
		ss.lastIO = time.Now()
		written += n
		ss.notify()
		ss.mu.Unlock()
	}
	return written, nil
}

// awaitChange releases mu, which the caller holds, and waits until the
// session changes (notify) or done is closed; false if done was.
func (ss *session) awaitChange(done <-chan struct{}) bool {
	wait := ss.changed
	ss.mu.Unlock()
	select {
	case <-wait:
		return true
	case <-done:
		return false
	}
}

// sessionReader hands the client's input to the runtime.
type sessionReader struct{ ss *session }

func (r *sessionReader) Read(p []byte) (int, error) {
	ss := r.ss
	for {
		ss.mu.Lock()
		switch {
		case len(ss.in) > 0:
			n := copy(p, ss.in)
			ss.in = ss.in[n:]
			ss.notify()
			ss.mu.Unlock()
			return n, nil
		case ss.inEOF:
			ss.mu.Unlock()
			return 0, io.EOF
		case ss.terminated != "" || ss.ended:
			ss.mu.Unlock()
			return 0, io.EOF
		}
		ss.awaitChange(ss.ctx.Done())
	}
}

func (ss *session) beginWrite() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.writing {
		return false
	}
	ss.writing = true
	return true
}

func (ss *session) endWrite() {
	ss.mu.Lock()
	ss.writing = false
	ss.mu.Unlock()
}

// write accepts one input frame once there is room for it.
func (ss *session) write(stop context.Context, seq uint64, data []byte, eof bool) error {
	for {
		ss.mu.Lock()
		switch {
		case seq <= ss.inSeq:
			ss.mu.Unlock()
			return nil // a resend of a frame already taken
		case seq != ss.inSeq+1:
			want := ss.inSeq + 1
			ss.mu.Unlock()
			return wire.BadRequest(wire.HeaderSeq, fmt.Sprintf("stdin frame %d out of order, want %d", seq, want))
		case ss.terminated != "" || ss.ended || ss.inEOF:
			ss.mu.Unlock()
			return nil // nobody reads it any more; the read side reports the end
		case len(ss.in) == 0 || len(ss.in)+len(data) <= ss.opts.Buffer:
			ss.in = append(ss.in, data...)
			ss.inEOF = eof
			ss.inSeq = seq
			ss.lastIO = time.Now()
			ss.notify()
			ss.mu.Unlock()
			return nil
		}
		if !ss.awaitChange(stop.Done()) {
			return &wire.Error{Code: wire.CodeInternal, Description: "node is shutting down"}
		}
	}
}

// resize queues the latest size; an unread older one is replaced.
func (ss *session) resize(sz wire.TerminalSize) {
	if sz.Width == 0 || sz.Height == 0 {
		return
	}
	ss.mu.Lock()
	ss.sizes = []wire.TerminalSize{sz}
	ss.notify()
	ss.mu.Unlock()
}

// nextSize is the runtime stream's terminal size queue: it waits for a
// size and returns nil once the session ends.
func (ss *session) nextSize() *wire.TerminalSize {
	for {
		ss.mu.Lock()
		if len(ss.sizes) > 0 {
			sz := ss.sizes[0]
			ss.sizes = nil
			ss.mu.Unlock()
			return &sz
		}
		if ss.terminated != "" || ss.ended {
			ss.mu.Unlock()
			return nil
		}
		ss.awaitChange(ss.ctx.Done())
	}
}
