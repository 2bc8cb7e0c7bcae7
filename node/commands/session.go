package commands

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/messages/wire"
)

// SessionOptions bound a node's interactive sessions. Zero values take the
// defaults.
type SessionOptions struct {
	// MaxSessions bounds the sessions open at once on the node.
	MaxSessions int
	// Poll is how long a read waits for output before it is answered
	// empty; the client then reads again, which is its heartbeat.
	Poll time.Duration
	// ClientTimeout closes a session whose client sent nothing (no read,
	// no input) for this long: the client went away.
	ClientTimeout time.Duration
	// IdleTimeout closes a session without input or output for this long.
	IdleTimeout time.Duration
	// Buffer bounds the output (and, separately, the input) a session
	// holds; a faster producer waits.
	Buffer int
	// MaxFrameBytes bounds one stdin frame and one output frame.
	MaxFrameBytes int
}

func (o *SessionOptions) defaults() {
	if o.MaxSessions <= 0 {
		o.MaxSessions = wire.DefaultMaxSessions
	}
	if o.Poll <= 0 {
		o.Poll = wire.DefaultSessionPoll
	}
	if o.ClientTimeout <= 0 {
		o.ClientTimeout = wire.DefaultSessionClientTimeout
	}
	if o.ClientTimeout < 2*o.Poll {
		o.ClientTimeout = 2 * o.Poll
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = wire.DefaultSessionIdle
	}
	if o.MaxFrameBytes <= 0 {
		o.MaxFrameBytes = wire.DefaultMaxFrameBytes
	}
	if o.Buffer < o.MaxFrameBytes {
		o.Buffer = max(wire.DefaultSessionBuffer, o.MaxFrameBytes)
	}
}

// sessions is a node's table of open sessions and the subscription that
// carries their traffic.
type sessions struct {
	svc  *Service
	opts SessionOptions
	sub  *nats.Subscription

	mu   sync.Mutex
	open map[string]*session
	wg   sync.WaitGroup // run goroutines and request handlers
}

func (s *Service) startSessions() error {
	t := &sessions{svc: s, opts: s.opts.Sessions, open: map[string]*session{}}
	t.opts.defaults()
	sub, err := s.nc.Subscribe(wire.SessionSubject(s.opts.NodeName, "*", "*"), t.dispatch)
	if err != nil {
		return fmt.Errorf("subscribe to session traffic: %w", err)
	}
	t.sub = sub
	s.sessions = t
	t.wg.Add(1)
	go t.janitor()
	return nil
}

// stop ends every session (their clients read "node stopped") and waits.
func (t *sessions) stop() {
	_ = t.sub.Unsubscribe()
	t.mu.Lock()
	for _, ss := range t.open {
		ss.terminate(wire.SessionEndNodeStopped)
	}
	t.mu.Unlock()
	t.wg.Wait()
}

// janitor closes sessions whose client went away or that sat idle.
func (t *sessions) janitor() {
	defer t.wg.Done()
	tick := time.NewTicker(min(t.opts.Poll, time.Second))
	defer tick.Stop()
	for {
		select {
		case <-t.svc.ctx.Done():
			return
		case now := <-tick.C:
			t.mu.Lock()
			for id, ss := range t.open {
				lastClient, lastIO, ended := ss.times()
				switch {
				case now.Sub(lastClient) > t.opts.ClientTimeout:
					if first, done := ss.terminate(wire.SessionEndClientGone); first {
						klog.InfoS("Interactive session closed: client gone", "session", id, "pod", ss.pod, "silentFor", now.Sub(lastClient).Round(time.Second))
					} else if done {
						delete(t.open, id) // its stream already returned
					}
				case !ended && now.Sub(lastIO) > t.opts.IdleTimeout:
					if first, _ := ss.terminate(wire.SessionEndIdle); first {
						klog.InfoS("Interactive session closed: idle", "session", id, "pod", ss.pod, "idleTimeout", t.opts.IdleTimeout)
					}
				}
			}
			t.mu.Unlock()
		}
	}
}

// openSession handles the three stream verbs.
func (s *Service) openSession(verb string) func(context.Context, micro.Request) (any, error) {
	return func(ctx context.Context, req micro.Request) (any, error) {
		var r wire.SessionRequest
		if err := decode(req, &r); err != nil {
			return nil, err
		}
		if err := checkSessionRequest(verb, &r); err != nil {
			return nil, err
		}
		owner := inboxOf(req.Reply())
		if owner == "" {
			return nil, wire.BadRequest("reply", "a session must be opened with a request (reply subject in the client's inbox)")
		}
		sn, ok := s.node.(StreamNode)
		if !ok {
			return nil, &wire.Error{Code: wire.CodeNotImplemented, Description: "this node cannot stream (exec -it, attach, port-forward)"}
		}
		t := s.sessions
		ss, err := t.reserve(verb, &r, owner)
		if err != nil {
			return nil, err
		}
		pctx, cancel := s.timeout(ctx)
		run, err := sn.PrepareStream(pctx, verb, &r)
		cancel()
		if err != nil {
			t.release(ss.id)
			return nil, fmt.Errorf("%s in %s/%s: %w", verb, r.Namespace, r.Name, err)
		}
		t.start(ss, run)
		klog.V(2).InfoS("Interactive session opened", "session", ss.id, "verb", verb, "pod", ss.pod, "container", r.Container, "tty", r.TTY, "stdin", r.Stdin, "port", r.Port)
		o := t.opts
		return wire.SessionResponse{
			Session: ss.id, MaxFrameBytes: o.MaxFrameBytes, PollMillis: o.Poll.Milliseconds(),
			ClientTimeoutMillis: o.ClientTimeout.Milliseconds(), IdleTimeoutMillis: o.IdleTimeout.Milliseconds(),
		}, nil
	}
}

func checkSessionRequest(verb string, r *wire.SessionRequest) error {
	if err := checkRef(&r.Namespace, r.Name); err != nil {
		return err
	}
	switch verb {
	case wire.VerbStreamExec:
		if len(r.Command) == 0 {
			return wire.BadRequest("command", "required")
		}
		if len(r.Command) > wire.MaxSessionCommandArgs {
			return wire.BadRequest("command", fmt.Sprintf("%d arguments, at most %d", len(r.Command), wire.MaxSessionCommandArgs))
		}
		n := 0
		for _, a := range r.Command {
			n += len(a)
		}
		if n > wire.MaxSessionCommandBytes {
			return wire.BadRequest("command", fmt.Sprintf("%d bytes, at most %d", n, wire.MaxSessionCommandBytes))
		}
	case wire.VerbStreamPortForward:
		if r.Port < 1 || r.Port > 65535 {
			return wire.BadRequest("port", fmt.Sprintf("%d: must be 1-65535", r.Port))
		}
		if r.Container != "" || len(r.Command) > 0 || r.TTY {
			return wire.BadRequest("port", "port-forward takes no container, command or tty")
		}
		r.Stdin = true
	}
	if verb != wire.VerbStreamExec && len(r.Command) > 0 {
		return wire.BadRequest("command", "only exec runs a command")
	}
	if r.Width > wire.MaxTerminalDimension || r.Height > wire.MaxTerminalDimension {
		return wire.BadRequest("width", fmt.Sprintf("terminal %dx%d: at most %d each way", r.Width, r.Height, wire.MaxTerminalDimension))
	}
	return nil
}

// inboxOf is the client's inbox a reply subject lives in: all tokens but
// the last (nats.go answers requests on <inbox prefix>.<conn token>.<n>).
// A session's later requests must come from the same inbox.
func inboxOf(reply string) string {
	i := strings.LastIndexByte(reply, '.')
	if i <= 0 {
		return ""
	}
	return reply[:i]
}

// reserve takes a slot for a new session.
func (t *sessions) reserve(verb string, r *wire.SessionRequest, owner string) (*session, error) {
	b := make([]byte, 16) // 128 random bits
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("session id: %w", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.svc.ctx.Err() != nil {
		return nil, &wire.Error{Code: wire.CodeInternal, Description: "node is shutting down"}
	}
	if len(t.open) >= t.opts.MaxSessions {
		return nil, &wire.Error{Code: wire.CodeTooMany, Description: fmt.Sprintf("too many interactive sessions on node %q: limit %d (max sessions); close one and retry", t.svc.opts.NodeName, t.opts.MaxSessions)}
	}
	ss := newSession(hex.EncodeToString(b), verb, r, owner, t.opts)
	t.open[ss.id] = ss
	return ss, nil
}

// OpenSessions is how many interactive sessions the node holds (open, or
// ended and not yet collected by their client).
func (s *Service) OpenSessions() int {
	s.sessions.mu.Lock()
	defer s.sessions.mu.Unlock()
	return len(s.sessions.open)
}

func (t *sessions) release(id string) {
	t.mu.Lock()
	delete(t.open, id)
	t.mu.Unlock()
}

func (t *sessions) get(id string) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.open[id]
}

// start runs the stream; when it returns, its end is queued for the client
// (or the session is dropped if the client is already gone).
func (t *sessions) start(ss *session, run StreamFunc) {
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		sio := StreamIO{Stdout: &sessionWriter{ss, "stdout"}, Stderr: &sessionWriter{ss, "stderr"}}
		if ss.req.Stdin {
			sio.Stdin = &sessionReader{ss}
		}
		if ss.req.TTY {
			sio.Resize = ss.nextSize
		}
		code, err := run(ss.ctx, sio)
		if gone := ss.finish(code, err); gone {
			t.release(ss.id)
		}
		klog.V(2).InfoS("Interactive session stream ended", "session", ss.id, "pod", ss.pod, "exitCode", code, "err", err)
	}()
}

// dispatch routes a session request. It never blocks: reads and input wait
// in their own goroutine, at most one of each per session.
func (t *sessions) dispatch(m *nats.Msg) {
	// actorlet.node.<node>.session.<id>.<op>
	toks := strings.Split(m.Subject, ".")
	if len(toks) < 2 || m.Reply == "" {
		return
	}
	id, op := toks[len(toks)-2], toks[len(toks)-1]
	ss := t.get(id)
	if ss == nil || ss.owner != inboxOf(m.Reply) {
		// Unknown, ended, or someone else's: all look the same.
		t.reply(m, wire.NotFound("session %q (ended, timed out, or never opened)", id))
		return
	}
	ss.touchClient()
	switch op {
	case wire.SessionOpRead:
		ack, err := headerUint(m, wire.HeaderAck)
		if err != nil {
			t.reply(m, err)
			return
		}
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			f, ok := ss.read(t.svc.ctx, ack)
			if !ok {
				return // superseded by a newer read
			}
			t.send(m.Reply, f)
		}()
	case wire.SessionOpStdin:
		seq, err := headerUint(m, wire.HeaderSeq)
		if err == nil && seq == 0 {
			err = wire.BadRequest(wire.HeaderSeq, "required, from 1")
		}
		if err == nil && len(m.Data) > t.opts.MaxFrameBytes {
			err = wire.BadRequest("stdin", fmt.Sprintf("frame of %d bytes, at most %d", len(m.Data), t.opts.MaxFrameBytes))
		}
		if err == nil && !ss.req.Stdin {
			err = wire.BadRequest("stdin", "the session was opened without stdin")
		}
		if err != nil {
			t.reply(m, err)
			return
		}
		eof := m.Header.Get(wire.HeaderEOF) != ""
		if !ss.beginWrite() {
			t.reply(m, &wire.Error{Code: wire.CodeTooMany, Description: "stdin: one frame at a time; wait for the previous frame's answer"})
			return
		}
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			defer ss.endWrite()
			t.reply(m, ss.write(t.svc.ctx, seq, m.Data, eof))
		}()
	case wire.SessionOpResize:
		var sz wire.TerminalSize
		var err error
		if uerr := json.Unmarshal(m.Data, &sz); uerr != nil {
			err = wire.BadRequest("resize", uerr.Error())
		} else if sz.Width > wire.MaxTerminalDimension || sz.Height > wire.MaxTerminalDimension {
			err = wire.BadRequest("resize", fmt.Sprintf("%dx%d: at most %d each way", sz.Width, sz.Height, wire.MaxTerminalDimension))
		} else if !ss.req.TTY {
			err = wire.BadRequest("resize", "the session has no terminal")
		} else {
			ss.resize(sz)
		}
		t.reply(m, err)
	case wire.SessionOpClose:
		if _, ended := ss.terminate(wire.SessionEndClientClosed); ended {
			t.release(ss.id)
		}
		klog.V(2).InfoS("Interactive session closed by client", "session", id, "pod", ss.pod)
		t.reply(m, nil)
	default:
		t.reply(m, wire.BadRequest("op", fmt.Sprintf("%q: want read, stdin, resize or close", op)))
	}
}

func headerUint(m *nats.Msg, h string) (uint64, error) {
	v := m.Header.Get(h)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, wire.BadRequest(h, err.Error())
	}
	return n, nil
}

// reply answers a session request: empty, or a micro error.
func (t *sessions) reply(m *nats.Msg, err error) {
	msg := &nats.Msg{Subject: m.Reply, Header: nats.Header{}}
	if err != nil {
		e := wire.ToError(err)
		msg.Header.Set(micro.ErrorCodeHeader, fmt.Sprint(e.Code))
		msg.Header.Set(micro.ErrorHeader, e.Description)
	}
	if perr := t.svc.nc.PublishMsg(msg); perr != nil && !errors.Is(perr, nats.ErrConnectionClosed) {
		klog.V(2).ErrorS(perr, "Failed to answer session request", "subject", m.Subject)
	}
}

// send answers a read with an output frame.
func (t *sessions) send(reply string, f frame) {
	msg := &nats.Msg{Subject: reply, Header: nats.Header{}, Data: f.data}
	if f.seq > 0 {
		msg.Header.Set(wire.HeaderSeq, strconv.FormatUint(f.seq, 10))
		if f.stream != "" {
			msg.Header.Set(wire.HeaderStream, f.stream)
		}
	}
	if f.last {
		msg.Header.Set(wire.HeaderEnd, f.end.Reason)
		msg.Header.Set(wire.HeaderExitCode, strconv.Itoa(f.end.ExitCode))
		if f.end.Error != "" {
			msg.Header.Set(wire.HeaderError, f.end.Error)
		}
	}
	if err := t.svc.nc.PublishMsg(msg); err != nil {
		klog.V(2).ErrorS(err, "Failed to send session frame", "reply", reply)
	}
}

// frame is one answer to a read.
type frame struct {
	seq    uint64 // 0: nothing new (poll answer)
	stream string
	data   []byte
	last   bool
	end    wire.SessionEnd
}

type chunk struct {
	stream string
	data   []byte
}

// session is one interactive stream between a client and the runtime.
type session struct {
	id, verb, owner string
	pod             string
	req             wire.SessionRequest
	opts            SessionOptions
	ctx             context.Context
	cancel          context.CancelFunc

	mu         sync.Mutex
	changed    chan struct{} // closed and replaced on every change
	out        []chunk       // output not yet framed
	outBytes   int
	seq        uint64 // of the last frame built
	unacked    *frame // the last frame sent, kept until acknowledged
	readGen    uint64 // the newest read; older ones give up
	in         []byte // input not yet read by the runtime
	inEOF      bool
	inSeq      uint64 // last input frame accepted
	writing    bool
	sizes      []wire.TerminalSize // at most one pending: the latest
	ended      bool                // the stream returned; end is set
	lastBuilt  bool                // the end frame was built
	terminated string              // why the session was cut (client gone…)
	end        wire.SessionEnd
	lastClient time.Time
	lastIO     time.Time
}

func newSession(id, verb string, r *wire.SessionRequest, owner string, o SessionOptions) *session {
	now := time.Now()
	ss := &session{
		id: id, verb: verb, owner: owner, req: *r, opts: o, pod: r.Namespace + "/" + r.Name,
		changed: make(chan struct{}), lastClient: now, lastIO: now,
	}
	ss.ctx, ss.cancel = context.WithCancel(context.Background())
	if r.TTY && r.Width > 0 && r.Height > 0 {
		ss.sizes = []wire.TerminalSize{{Width: r.Width, Height: r.Height}}
	}
	return ss
}

// notify wakes everything waiting on the session; call with mu held.
func (ss *session) notify() {
	close(ss.changed)
	ss.changed = make(chan struct{})
}

func (ss *session) touchClient() {
	ss.mu.Lock()
	ss.lastClient = time.Now()
	ss.mu.Unlock()
}

func (ss *session) times() (lastClient, lastIO time.Time, ended bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.lastClient, ss.lastIO, ss.ended
}

// terminate cuts the session: the stream's context is canceled, its reader
// and writers fail. first reports whether this call cut it; ended whether
// the stream had already returned (then nothing else will release the
// session).
func (ss *session) terminate(why string) (first, ended bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.terminated == "" {
		ss.terminated = why
		first = true
	}
	ss.cancel()
	ss.notify()
	return first, ss.ended
}

// finish records how the stream ended. It reports whether the client is
// already gone (nobody will read the end: release the session now).
func (ss *session) finish(code int, err error) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.ended = true
	switch {
	case ss.terminated != "":
		ss.end = wire.SessionEnd{ExitCode: 1, Reason: ss.terminated}
	case err != nil:
		ss.end = wire.SessionEnd{ExitCode: 1, Reason: wire.SessionEndError, Error: err.Error()}
	default:
		ss.end = wire.SessionEnd{ExitCode: code, Reason: wire.SessionEndExited}
	}
	ss.notify()
	return ss.terminated == wire.SessionEndClientClosed || ss.terminated == wire.SessionEndClientGone
}

// read waits for the frame after ack: output, the end, or nothing new
// after the poll period. ok is false when a newer read took over.
func (ss *session) read(stop context.Context, ack uint64) (frame, bool) {
	ss.mu.Lock()
	ss.readGen++
	gen := ss.readGen
	ss.notify() // an older read still waiting gives up now
	if ss.unacked != nil && ss.unacked.seq <= ack {
		ss.unacked = nil
	}
	ss.mu.Unlock()
	poll := time.NewTimer(ss.opts.Poll)
	defer poll.Stop()
	for {
		ss.mu.Lock()
		if ss.readGen != gen {
			ss.mu.Unlock()
			return frame{}, false
		}
		if ss.unacked != nil { // its answer was lost: send it again
			f := *ss.unacked
			ss.mu.Unlock()
			return f, true
		}
		if f, ok := ss.nextFrame(); ok {
			ss.unacked = &f
			ss.mu.Unlock()
			return f, true
		}
		wait := ss.changed
		ss.mu.Unlock()
		select {
		case <-wait:
		case <-poll.C:
			return frame{}, true
		case <-stop.Done():
			return frame{last: true, seq: ack + 1, end: wire.SessionEnd{ExitCode: 1, Reason: wire.SessionEndNodeStopped}}, true
		}
	}
}

// nextFrame builds the next frame from queued output (one stream, at most
// MaxFrameBytes), or the last frame once the stream ended and its output
// is drained. Call with mu held.
func (ss *session) nextFrame() (frame, bool) {
	if len(ss.out) > 0 {
		c := &ss.out[0]
		f := frame{stream: c.stream}
		for len(ss.out) > 0 && ss.out[0].stream == f.stream && len(f.data) < ss.opts.MaxFrameBytes {
			c = &ss.out[0]
			n := min(len(c.data), ss.opts.MaxFrameBytes-len(f.data))
			f.data = append(f.data, c.data[:n]...)
			c.data = c.data[n:]
			if len(c.data) == 0 {
				ss.out = ss.out[1:]
			}
		}
		ss.outBytes -= len(f.data)
		ss.seq++
		f.seq = ss.seq
		ss.notify() // room for writers
		return f, true
	}
	if ss.ended && !ss.lastBuilt {
		ss.lastBuilt = true
		ss.seq++
		return frame{seq: ss.seq, last: true, end: ss.end}, true
	}
	return frame{}, false
}

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
			wait := ss.changed
			ss.mu.Unlock()
			select {
			case <-wait:
			case <-ss.ctx.Done():
			}
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
		wait := ss.changed
		ss.mu.Unlock()
		select {
		case <-wait:
		case <-ss.ctx.Done():
		}
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
		wait := ss.changed
		ss.mu.Unlock()
		select {
		case <-wait:
		case <-stop.Done():
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
		wait := ss.changed
		ss.mu.Unlock()
		select {
		case <-wait:
		case <-ss.ctx.Done():
		}
	}
}
