package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
)

// Session is the client's end of an interactive session.
type Session struct {
	nc   *nats.Conn
	node string
	resp SessionResponse

	closeOnce sync.Once
}

// OpenSession opens an exec, attach or port-forward session on node (verb
// is one of the VerbStream* constants). The node has checked the pod and
// prepared the runtime's stream when it answers.
func (c *Client) OpenSession(ctx context.Context, node, verb string, req SessionRequest) (*Session, error) {
	var resp SessionResponse
	if err := c.CallPod(ctx, node, req.Namespace, verb, c.timeout(), req, &resp); err != nil {
		return nil, err
	}
	if resp.Session == "" || resp.Token == "" || resp.MaxFrameBytes <= 0 || resp.PollMillis <= 0 || resp.ClientTimeoutMillis <= 0 {
		return nil, fmt.Errorf("%s on node %q: malformed answer %+v", verb, node, resp)
	}
	return &Session{nc: c.NC, node: node, resp: resp}, nil
}

// ID is the session's ID.
func (s *Session) ID() string { return s.resp.Session }

// Response is the node's answer to the open.
func (s *Session) Response() SessionResponse { return s.resp }

// SessionFor is a Session on connection nc for an open answer of node.
// The node serves only requests carrying the answer's token, from the
// opener's inbox.
func SessionFor(nc *nats.Conn, node string, resp SessionResponse) *Session {
	return &Session{nc: nc, node: node, resp: resp}
}

func (s *Session) subject(op string) string { return SessionSubject(s.node, s.resp.Session, op) }

// Request sends one session request (op: a SessionOp*) and turns error
// headers into *Error. Run uses it; it is exported for tests and tools.
// Requests carry the session's token and go through the connection's
// shared reply inbox, which the node checks against the one that opened
// the session.
func (s *Session) Request(ctx context.Context, op string, hdr nats.Header, data []byte, timeout time.Duration) (*nats.Msg, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if hdr == nil {
		hdr = nats.Header{}
	}
	hdr.Set(HeaderSessionToken, s.resp.Token)
	m, err := s.nc.RequestMsgWithContext(ctx, &nats.Msg{Subject: s.subject(op), Header: hdr, Data: data})
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return nil, fmt.Errorf("node %q is not reachable (no responders)", s.node)
		}
		return nil, err
	}
	if code := m.Header.Get(micro.ErrorCodeHeader); code != "" {
		return nil, &Error{Code: parseCode(code), Description: m.Header.Get(micro.ErrorHeader)}
	}
	return m, nil
}

func isTimeout(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
}

// StreamOptions are the client's side of a session's streams.
type StreamOptions struct {
	// Stdin is sent to the remote when the session has stdin; its EOF
	// ends the remote's input.
	Stdin io.Reader
	// Stdout and Stderr receive the remote's output (with a TTY, all of it
	// arrives on Stdout).
	Stdout, Stderr io.Writer
	// Resize, when set, delivers terminal sizes to send (TTY sessions).
	Resize <-chan TerminalSize
}

// Run carries the session's streams until the remote ends (its exit code
// is in the returned SessionEnd) or ctx is canceled (the session is closed,
// and the node stops the remote stream). Each direction has at most one
// frame in flight: output is long-polled, so the node never sends more
// than the client asked for.
func (s *Session) Run(ctx context.Context, o StreamOptions) (*SessionEnd, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer s.Close()
	if o.Stdin != nil {
		// A failed send ends only the input: the output side sees why
		// the session failed, if it did.
		go func() { _ = s.sendInput(ctx, o.Stdin) }()
	}
	if o.Resize != nil {
		go s.sendSizes(ctx, o.Resize)
	}
	type result struct {
		end *SessionEnd
		err error
	}
	done := make(chan result, 1)
	go func() {
		end, err := s.readOutput(ctx, o.Stdout, o.Stderr)
		done <- result{end, err}
	}()
	select {
	case r := <-done:
		return r.end, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close tells the node the client is done; the remote stream is stopped if
// it still runs. Safe to call more than once.
func (s *Session) Close() {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, _ = s.Request(ctx, SessionOpClose, nil, nil, 2*time.Second)
	})
}

// readOutput long-polls for output frames and writes them out until the
// last frame.
func (s *Session) readOutput(ctx context.Context, stdout, stderr io.Writer) (*SessionEnd, error) {
	poll := time.Duration(s.resp.PollMillis) * time.Millisecond
	clientTimeout := time.Duration(s.resp.ClientTimeoutMillis) * time.Millisecond
	var ack uint64
	lastAnswer := time.Now()
	for {
		hdr := nats.Header{}
		hdr.Set(HeaderAck, strconv.FormatUint(ack, 10))
		// Wait a little longer than the node's poll; a lost answer is
		// asked for again with the same ack.
		m, err := s.Request(ctx, SessionOpRead, hdr, nil, poll+poll/2+time.Second)
		switch {
		case err == nil:
			lastAnswer = time.Now()
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case isTimeout(err) && time.Since(lastAnswer) < clientTimeout:
			continue
		case isTimeout(err):
			return nil, fmt.Errorf("node %q stopped answering the session for %s", s.node, time.Since(lastAnswer).Round(time.Second))
		case IsNotFound(err):
			return nil, fmt.Errorf("the session ended on node %q: %w", s.node, err)
		default:
			return nil, err
		}
		seqHdr := m.Header.Get(HeaderSeq)
		if seqHdr == "" {
			continue // nothing new
		}
		seq, err := strconv.ParseUint(seqHdr, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("bad %s %q from node %q", HeaderSeq, seqHdr, s.node)
		}
		if seq <= ack {
			continue // a resend of what we have
		}
		ack = seq
		if len(m.Data) > 0 {
			w := stdout
			if m.Header.Get(HeaderStream) == "stderr" && stderr != nil {
				w = stderr
			}
			if w != nil {
				if _, err := w.Write(m.Data); err != nil {
					return nil, fmt.Errorf("write output: %w", err)
				}
			}
		}
		if reason := m.Header.Get(HeaderEnd); reason != "" {
			end := &SessionEnd{Reason: reason, Error: m.Header.Get(HeaderError)}
			end.ExitCode, _ = strconv.Atoi(m.Header.Get(HeaderExitCode))
			return end, nil
		}
	}
}

// sendInput sends stdin in frames of at most MaxFrameBytes, one at a time,
// then an EOF frame.
func (s *Session) sendInput(ctx context.Context, in io.Reader) error {
	buf := make([]byte, s.resp.MaxFrameBytes)
	clientTimeout := time.Duration(s.resp.ClientTimeoutMillis) * time.Millisecond
	var seq uint64
	for {
		n, rerr := in.Read(buf)
		if ctx.Err() != nil {
			return nil
		}
		eof := rerr != nil // a failed input ends it, like EOF
		if n == 0 && !eof {
			continue
		}
		seq++
		hdr := nats.Header{}
		hdr.Set(HeaderSeq, strconv.FormatUint(seq, 10))
		if eof {
			hdr.Set(HeaderEOF, "1")
		}
		// The node holds the answer while its input buffer is full; a
		// timeout resends the same frame (the node drops duplicates).
		start := time.Now()
		for {
			_, err := s.Request(ctx, SessionOpStdin, hdr, buf[:n], clientTimeout/2)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return nil
			}
			if !isTimeout(err) || time.Since(start) > 4*clientTimeout {
				return fmt.Errorf("send input: %w", err)
			}
		}
		if eof {
			return nil
		}
	}
}

// sendSizes forwards terminal sizes.
func (s *Session) sendSizes(ctx context.Context, sizes <-chan TerminalSize) {
	for {
		select {
		case <-ctx.Done():
			return
		case sz, ok := <-sizes:
			if !ok {
				return
			}
			data := fmt.Appendf(nil, `{"width":%d,"height":%d}`, sz.Width, sz.Height)
			_, _ = s.Request(ctx, SessionOpResize, nil, data, 5*time.Second)
		}
	}
}
