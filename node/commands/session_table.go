package commands

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
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
	// opened wakes the janitor, which sleeps while no session is open.
	opened chan struct{}
}

func (s *Service) startSessions() error {
	t := &sessions{svc: s, opts: s.opts.Sessions, open: map[string]*session{}, opened: make(chan struct{}, 1)}
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

// janitor closes sessions whose client went away or that sat idle. It
// looks every Poll (at most a second) while a session is open, and sleeps
// while none is.
func (t *sessions) janitor() {
	defer t.wg.Done()
	for {
		select {
		case <-t.svc.ctx.Done():
			return
		case <-t.opened:
		}
		t.watch()
	}
}

// watch checks the open sessions every Poll until none is left (or the
// service stops).
func (t *sessions) watch() {
	tick := time.NewTicker(min(t.opts.Poll, time.Second))
	defer tick.Stop()
	for {
		select {
		case <-t.svc.ctx.Done():
			return
		case now := <-tick.C:
			if t.expire(now) == 0 {
				return
			}
		}
	}
}

// expire ends the sessions whose client is gone or that sat idle at now,
// forgets the ended ones whose stream returned, and returns how many are
// left.
func (t *sessions) expire(now time.Time) int {
	t.mu.Lock()
	defer t.mu.Unlock()
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
	return len(t.open)
}

// reserve takes a slot for a new session.
func (t *sessions) reserve(verb string, r *wire.SessionRequest, owner string) (*session, error) {
	b := make([]byte, 16) // 128 random bits
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("session id: %w", err)
	}
	token := make([]byte, 32) // 256 random bits, never in a subject
	if _, err := rand.Read(token); err != nil {
		return nil, fmt.Errorf("session token: %w", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.svc.ctx.Err() != nil {
		return nil, &wire.Error{Code: wire.CodeInternal, Description: "node is shutting down"}
	}
	if len(t.open) >= t.opts.MaxSessions {
		return nil, &wire.Error{Code: wire.CodeTooMany, Description: fmt.Sprintf("too many interactive sessions on node %q: limit %d (max sessions); close one and retry", t.svc.opts.NodeName, t.opts.MaxSessions)}
	}
	ss := newSession(hex.EncodeToString(b), hex.EncodeToString(token), verb, r, owner, t.opts)
	t.open[ss.id] = ss
	select {
	case t.opened <- struct{}{}:
	default:
	}
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
