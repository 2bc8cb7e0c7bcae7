package procruntime

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// Attachable stdio. The shim holds the container's stdio: its stdin (a
// pipe when the config asks for stdin) or, with tty, the master side of a
// pseudo-terminal whose slave is the process' controlling terminal. It
// serves the stdio on a unix socket (attach.sock) to any number of attach
// sessions, framed as below. Output goes to the CRI log whether or not
// anybody is attached; an attached client that cannot keep up loses its
// session, never slows the container.
//
// A frame is a type byte, a big-endian uint32 length and the payload
// (at most maxFrame bytes).
const (
	frameStdin      byte = 1 // client → shim: bytes for the container's stdin
	frameStdinClose byte = 2 // client → shim: this session's stdin ended
	frameResize     byte = 3 // client → shim: width, height (2 × uint16)
	frameStdout     byte = 4 // shim → client
	frameStderr     byte = 5 // shim → client (never with tty)

	maxFrame = 32 * 1024
	// attachQueue is how many output frames may wait for one slow client
	// before its session is dropped.
	attachQueue = 256
	// maxAttachSessions bounds concurrent attach sessions per container.
	maxAttachSessions = 16
)

func writeFrame(w io.Writer, typ byte, p []byte) error {
	var h [5]byte
	h[0] = typ
	binary.BigEndian.PutUint32(h[1:], uint32(len(p)))
	if _, err := w.Write(append(h[:], p...)); err != nil {
		return err
	}
	return nil
}

func readFrame(r io.Reader, buf []byte) (byte, []byte, error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("attach frame of %d bytes: limit is %d", n, maxFrame)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return 0, nil, err
	}
	return h[0], buf, nil
}

// attachSocketPath is where container id's shim serves attach: in the
// state directory's "attach" folder, or, when that path would not fit in a
// sockaddr_un (108 bytes), in a folder under the temp directory named
// after the state directory.
func attachSocketPath(rootDir, id string) string {
	name := id
	if len(name) > 24 {
		name = name[:24]
	}
	p := filepath.Join(rootDir, "attach", name+".sock")
	if len(p) < 100 {
		return p
	}
	sum := sha256.Sum256([]byte(rootDir))
	return filepath.Join(os.TempDir(), fmt.Sprintf("actorlet-%d", os.Getuid()), hex.EncodeToString(sum[:6]), name+".sock")
}

// containerIO is the shim's side of a container's stdio.
type containerIO struct {
	tty       bool
	stdinOnce bool
	ptmx      *os.File // tty: master side, for stdin
	ptmxOut   *os.File // tty: a duplicate of ptmx, for output
	resizer   *guardedPty
	stdin     *os.File // no tty, stdin wanted: write end of the stdin pipe
	outR      *os.File // no tty: stdout read end
	errR      *os.File // no tty: stderr read end
	child     []*os.File
	listener  net.Listener
	sockPath  string

	mu          sync.Mutex
	sessions    map[*attachSession]struct{}
	stdinClosed bool
	firstDone   bool
	closed      bool
	wg          sync.WaitGroup // session writers
}

type attachSession struct {
	conn net.Conn
	out  chan []byte // framed output
	once sync.Once
}

func (s *attachSession) drop() { s.once.Do(func() { close(s.out) }) }

// newContainerIO wires cmd's stdio as spec asks and listens for attach
// sessions on spec.AttachSocket (none if empty).
func newContainerIO(spec shimSpec, cmd *exec.Cmd) (*containerIO, error) {
	cio := &containerIO{tty: spec.Tty, stdinOnce: spec.StdinOnce, sessions: map[*attachSession]struct{}{}}
	fail := func(err error) (*containerIO, error) {
		cio.closeChildEnds()
		cio.closeAll()
		return nil, err
	}
	if spec.Tty {
		ptmx, tty, err := pty.Open()
		if err != nil {
			return fail(fmt.Errorf("open pseudo-terminal: %w", err))
		}
		cio.ptmx = ptmx
		cio.resizer = &guardedPty{f: ptmx}
		cio.child = append(cio.child, tty)
		if cio.ptmxOut, err = dupFile(ptmx); err != nil {
			return fail(err)
		}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
		// The terminal's session leader (and so still its group leader,
		// which StopContainer signals).
		cmd.SysProcAttr.Setpgid = false
		cmd.SysProcAttr.Setsid = true
		cmd.SysProcAttr.Setctty = true
		cmd.SysProcAttr.Ctty = 0
	} else {
		outR, outW, err := os.Pipe()
		if err != nil {
			return fail(fmt.Errorf("create stdout pipe: %w", err))
		}
		cio.outR = outR
		cio.child = append(cio.child, outW)
		errR, errW, err := os.Pipe()
		if err != nil {
			return fail(fmt.Errorf("create stderr pipe: %w", err))
		}
		cio.errR = errR
		cio.child = append(cio.child, errW)
		cmd.Stdout, cmd.Stderr = outW, errW
		if spec.Stdin {
			inR, inW, err := os.Pipe()
			if err != nil {
				return fail(fmt.Errorf("create stdin pipe: %w", err))
			}
			cio.stdin = inW
			cio.child = append(cio.child, inR)
			cmd.Stdin = inR
		}
	}
	if spec.AttachSocket != "" {
		if err := os.MkdirAll(filepath.Dir(spec.AttachSocket), 0o700); err != nil {
			return fail(fmt.Errorf("create attach socket directory: %w", err))
		}
		_ = os.Remove(spec.AttachSocket)
		l, err := net.Listen("unix", spec.AttachSocket)
		if err != nil {
			return fail(fmt.Errorf("listen for attach: %w", err))
		}
		cio.listener, cio.sockPath = l, spec.AttachSocket
	}
	return cio, nil
}

// closeChildEnds closes the process' ends of its stdio once it started.
func (cio *containerIO) closeChildEnds() {
	for _, f := range cio.child {
		_ = f.Close()
	}
	cio.child = nil
}

// copyOutput copies the container's output into log and to attached
// sessions, and starts accepting attach sessions.
func (cio *containerIO) copyOutput(log *criLog) *outputCopier {
	o := &outputCopier{}
	copyStream := func(stream string, typ byte, f *os.File) {
		o.pipes = append(o.pipes, f)
		o.wg.Add(1)
		go func() {
			defer o.wg.Done()
			log.copyFrom(stream, io.TeeReader(f, broadcaster2{cio, typ}))
		}()
	}
	if cio.tty {
		copyStream(streamStdout, frameStdout, cio.ptmxOut)
	} else {
		copyStream(streamStdout, frameStdout, cio.outR)
		copyStream(streamStderr, frameStderr, cio.errR)
	}
	if cio.listener != nil {
		go cio.accept()
	}
	return o
}

// broadcaster2 writes one output stream to every attach session.
type broadcaster2 struct {
	cio *containerIO
	typ byte
}

func (b broadcaster2) Write(p []byte) (int, error) {
	b.cio.broadcast(b.typ, p)
	return len(p), nil
}

func (cio *containerIO) broadcast(typ byte, p []byte) {
	cio.mu.Lock()
	defer cio.mu.Unlock()
	if len(cio.sessions) == 0 {
		return
	}
	for len(p) > 0 {
		n := min(len(p), maxFrame)
		frame := make([]byte, 5+n)
		frame[0] = typ
		binary.BigEndian.PutUint32(frame[1:], uint32(n))
		copy(frame[5:], p[:n])
		for s := range cio.sessions {
			select {
			case s.out <- frame:
			default: // too slow: drop the session, not the container's output
				delete(cio.sessions, s)
				s.drop()
			}
		}
		p = p[n:]
	}
}

func (cio *containerIO) accept() {
	for {
		conn, err := cio.listener.Accept()
		if err != nil {
			return
		}
		if !sameUser(conn) {
			conn.Close()
			continue
		}
		s := &attachSession{conn: conn, out: make(chan []byte, attachQueue)}
		cio.mu.Lock()
		if cio.closed || len(cio.sessions) >= maxAttachSessions {
			cio.mu.Unlock()
			conn.Close()
			continue
		}
		cio.sessions[s] = struct{}{}
		cio.wg.Add(1)
		cio.mu.Unlock()
		go cio.writeSession(s)
		go cio.readSession(s)
	}
}

// sameUser accepts only peers running as the shim's user (or root).
func sameUser(conn net.Conn) bool {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return false
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return false
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil || credErr != nil {
		return false
	}
	return cred.Uid == 0 || int(cred.Uid) == os.Getuid()
}

func (cio *containerIO) writeSession(s *attachSession) {
	defer cio.wg.Done()
	defer s.conn.Close()
	for frame := range s.out {
		if _, err := s.conn.Write(frame); err != nil {
			cio.removeSession(s)
			for range s.out { // until dropped
			}
			return
		}
	}
}

func (cio *containerIO) removeSession(s *attachSession) {
	cio.mu.Lock()
	defer cio.mu.Unlock()
	if _, ok := cio.sessions[s]; ok {
		delete(cio.sessions, s)
		s.drop()
	}
}

func (cio *containerIO) readSession(s *attachSession) {
	sawStdin := false
	defer func() {
		if sawStdin {
			cio.sessionStdinDone()
		}
	}()
	buf := make([]byte, maxFrame)
	for {
		typ, p, err := readFrame(s.conn, buf)
		if err != nil {
			// The client left (or broke the protocol): end its session.
			cio.removeSession(s)
			return
		}
		switch typ {
		case frameStdin:
			sawStdin = true
			cio.writeStdin(p)
		case frameStdinClose:
			sawStdin = true
			cio.sessionStdinDone()
			sawStdin = false
		case frameResize:
			if cio.tty && len(p) == 4 {
				cio.resizer.setSize(binary.BigEndian.Uint16(p), binary.BigEndian.Uint16(p[2:]))
			}
		}
	}
}

func (cio *containerIO) writeStdin(p []byte) {
	var w *os.File
	cio.mu.Lock()
	if !cio.stdinClosed {
		if cio.tty {
			w = cio.ptmx
		} else {
			w = cio.stdin
		}
	}
	cio.mu.Unlock()
	if w != nil {
		_, _ = w.Write(p)
	}
}

// sessionStdinDone: with stdin_once, the first session's stdin ending
// closes the container's stdin (a terminal gets end-of-file, ^D).
func (cio *containerIO) sessionStdinDone() {
	cio.mu.Lock()
	defer cio.mu.Unlock()
	if !cio.stdinOnce || cio.firstDone {
		return
	}
	cio.firstDone = true
	cio.stdinClosed = true
	switch {
	case cio.tty:
		_, _ = cio.ptmx.Write([]byte{4})
	case cio.stdin != nil:
		_ = cio.stdin.Close()
	}
}

// closeAll ends attach: no new sessions, attached ones get the output
// queued so far and then end-of-stream.
func (cio *containerIO) closeAll() {
	if cio.listener != nil {
		_ = cio.listener.Close()
		_ = os.Remove(cio.sockPath)
	}
	cio.mu.Lock()
	cio.closed = true
	for s := range cio.sessions {
		delete(cio.sessions, s)
		s.drop()
	}
	if cio.stdin != nil && !cio.stdinClosed {
		_ = cio.stdin.Close()
	}
	cio.stdinClosed = true
	cio.mu.Unlock()
	cio.wg.Wait()
	if cio.resizer != nil {
		cio.resizer.close()
	}
}

// guardedPty is a pseudo-terminal master whose size may be set while
// another goroutine closes it (Fd and Close race otherwise).
type guardedPty struct {
	mu     sync.Mutex
	f      *os.File
	closed bool
}

func (g *guardedPty) setSize(cols, rows uint16) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		_ = pty.Setsize(g.f, &pty.Winsize{Cols: cols, Rows: rows})
	}
}

// signalSession sends sig to the terminal's foreground process group and
// its session leader's group (from the master side: TIOCGPGRP/TIOCGSID
// answer for the slave, in this process' PID namespace), which reaches a
// command that took a session of its own inside a pod's namespaces.
func (g *guardedPty) signalSession(sig syscall.Signal) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return
	}
	fd := int(g.f.Fd())
	if pgrp, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err == nil && pgrp > 0 {
		_ = syscall.Kill(-pgrp, sig)
	}
	if sid, err := unix.IoctlGetInt(fd, unix.TIOCGSID); err == nil && sid > 0 {
		_ = syscall.Kill(-sid, sig)
	}
}

func (g *guardedPty) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		g.closed = true
		_ = g.f.Close()
	}
}

// dupFile duplicates f's descriptor, so that closing one does not race
// with an ioctl on the other.
func dupFile(f *os.File) (*os.File, error) {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("duplicate %s: %w", f.Name(), err)
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}
