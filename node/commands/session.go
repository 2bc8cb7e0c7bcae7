package commands

import (
	"context"
	"crypto/subtle"
	"strings"
	"sync"
	"time"

	"github.com/actorlet/actorlet/messages/wire"
)

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
	// token is the secret only the opener received (in the open's reply,
	// on its own inbox); every request of the session must carry it.
	token  string
	pod    string
	req    wire.SessionRequest
	opts   SessionOptions
	ctx    context.Context
	cancel context.CancelFunc

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

func newSession(id, token, verb string, r *wire.SessionRequest, owner string, o SessionOptions) *session {
	now := time.Now()
	ss := &session{
		id: id, token: token, verb: verb, owner: owner, req: *r, opts: o, pod: r.Namespace + "/" + r.Name,
		changed: make(chan struct{}), lastClient: now, lastIO: now,
	}
	ss.ctx, ss.cancel = context.WithCancel(context.Background())
	if r.TTY && r.Width > 0 && r.Height > 0 {
		ss.sizes = []wire.TerminalSize{{Width: r.Width, Height: r.Height}}
	}
	return ss
}

// ownedBy reports whether a request with this token and reply subject
// comes from the session's opener: the token compared in constant time,
// and the reply under the inbox the open was answered to.
func (ss *session) ownedBy(token, reply string) bool {
	ok := subtle.ConstantTimeCompare([]byte(token), []byte(ss.token)) == 1
	return ok && strings.HasPrefix(reply, ss.owner+".")
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
