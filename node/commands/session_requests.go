package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/messages/wire"
)

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
			Session: ss.id, Token: ss.token, MaxFrameBytes: o.MaxFrameBytes, PollMillis: o.Poll.Milliseconds(),
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

// dispatch routes a session request. It never blocks: reads and input wait
// in their own goroutine, at most one of each per session.
func (t *sessions) dispatch(m *nats.Msg) {
	// actorlet.node.<node>.session.<id>.<op>
	toks := strings.Split(m.Subject, ".")
	if len(toks) < 2 || m.Reply == "" {
		return
	}
	if checkReply(m.Reply) != nil {
		return // not a request from an inbox (docs/security.md §2)
	}
	id, op := toks[len(toks)-2], toks[len(toks)-1]
	ss := t.get(id)
	if ss == nil || !ss.ownedBy(m.Header.Get(wire.HeaderSessionToken), m.Reply) {
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
