package wire

import "time"

// Verbs that open an interactive session (docs/protocol.md, "Interactive
// sessions"). They are micro endpoints like every other verb; the session's
// own traffic then flows on SessionSubject(node, id, op).
const (
	VerbStreamExec        = "stream.exec"
	VerbStreamAttach      = "stream.attach"
	VerbStreamPortForward = "stream.portforward"
)

// Operations on an open session: the last token of its subjects.
const (
	SessionOpRead   = "read"   // long-poll for the next output frame
	SessionOpStdin  = "stdin"  // one frame of input
	SessionOpResize = "resize" // the terminal's new size
	SessionOpClose  = "close"  // the client is done
)

// Headers of session frames. Data travels as the raw message body.
const (
	// HeaderAck (read request): the sequence number of the last output frame
	// the client received, 0 at first. The node drops frames up to it and
	// answers with the next one (or the same again, if its reply was lost).
	HeaderAck = "Actorlet-Ack"
	// HeaderSeq: read reply: the frame's sequence number (absent on an
	// empty poll answer); stdin request: the input frame's number, from 1.
	HeaderSeq = "Actorlet-Seq"
	// HeaderStream (read reply): which output the data belongs to: stdout
	// or stderr (port-forward: stdout).
	HeaderStream = "Actorlet-Stream"
	// HeaderEOF (stdin request): no more input after this frame.
	HeaderEOF = "Actorlet-Eof"
	// HeaderExitCode (read reply, last frame): the remote command's exit code.
	HeaderExitCode = "Actorlet-Exit-Code"
	// HeaderEnd (read reply, last frame): why the session ended.
	HeaderEnd = "Actorlet-End"
	// HeaderError (read reply, last frame): what failed, when the stream
	// could not be run to its end.
	HeaderError = "Actorlet-Error"
	// HeaderSessionToken (every request on an open session): the
	// session's secret token (SessionResponse.Token). The node serves a
	// session only to requests that carry it.
	HeaderSessionToken = "Actorlet-Session-Token"
)

// Why a session ended (HeaderEnd).
const (
	SessionEndExited      = "exited"       // the command (exec) or the stream (attach, port-forward) ended
	SessionEndError       = "error"        // the runtime's stream failed: HeaderError says why
	SessionEndIdle        = "idle timeout" // no input nor output for IdleTimeout
	SessionEndNodeStopped = "node stopped"
	// Cut on the client's side; only the node's log shows these.
	SessionEndClientClosed = "client closed"
	SessionEndClientGone   = "client gone"
)

// Defaults and limits of sessions (SessionOptions).
const (
	DefaultMaxSessions          = 32
	DefaultSessionPoll          = 5 * time.Second
	DefaultSessionClientTimeout = 20 * time.Second
	DefaultSessionIdle          = 4 * time.Hour // the kubelet's stream idle timeout
	DefaultSessionBuffer        = 256 * 1024
	DefaultMaxFrameBytes        = 64 * 1024
	MaxSessionCommandArgs       = 1024
	MaxSessionCommandBytes      = 128 * 1024
	MaxTerminalDimension        = 10000
)

// SessionRequest opens an interactive session (exec, attach or
// port-forward of one connection).
type SessionRequest struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Container may be empty when the pod has exactly one container
	// (exec, attach).
	Container string `json:"container,omitempty"`
	// Command to run (exec only).
	Command []string `json:"command,omitempty"`
	// Stdin: the client sends input. TTY: the remote runs in a terminal
	// (its stderr is merged into stdout, as with kubectl).
	Stdin bool `json:"stdin,omitempty"`
	TTY   bool `json:"tty,omitempty"`
	// Width and Height: the terminal's size at start (TTY).
	Width  uint16 `json:"width,omitempty"`
	Height uint16 `json:"height,omitempty"`
	// Port in the pod to connect to (port-forward only).
	Port int32 `json:"port,omitempty"`
}

// SessionResponse answers an open: the session's ID and the rules the
// client must keep.
type SessionResponse struct {
	Session string `json:"session"`
	// Token is the session's secret (256 random bits, hex): only this
	// answer carries it, and it reaches only the opener's reply subject.
	// Every later request of the session sends it (HeaderSessionToken);
	// the session ID alone, which is in every subject, gives nothing.
	Token string `json:"token"`
	// MaxFrameBytes bounds the body of one stdin frame.
	MaxFrameBytes int `json:"maxFrameBytes"`
	// PollMillis: the node answers a read after this long without output.
	PollMillis int64 `json:"pollMillis"`
	// ClientTimeoutMillis: a session whose client sent nothing for this
	// long is closed.
	ClientTimeoutMillis int64 `json:"clientTimeoutMillis"`
	// IdleTimeoutMillis: a session without input or output for this long
	// is closed.
	IdleTimeoutMillis int64 `json:"idleTimeoutMillis"`
}

// TerminalSize is a resize frame's body.
type TerminalSize struct {
	Width  uint16 `json:"width"`
	Height uint16 `json:"height"`
}

// SessionEnd is how a session ended, as the client saw it.
type SessionEnd struct {
	// ExitCode of the remote command (exec; 0 for attach and port-forward
	// streams that ended normally).
	ExitCode int
	// Reason: one of the SessionEnd* constants.
	Reason string
	// Error: what failed, for SessionEndError.
	Error string
}

// CodeTooMany answers an open beyond the node's session limit, and a second
// stdin frame sent before the first was accepted.
const CodeTooMany = 429

// CodeNotImplemented answers the stream verbs on a node that cannot stream.
const CodeNotImplemented = 501

// SessionSubject is the subject of one operation on a session of node.
func SessionSubject(node, session, op string) string {
	return CommandSubject(node, "session."+session+"."+op)
}
