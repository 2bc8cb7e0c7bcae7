// Package logindtest runs a private dbus-daemon and, on it, a stand-in for
// systemd-logind's shutdown interface: Inhibit (returning a real pipe whose
// far end tells when the lock is released), the InhibitDelayMaxUSec
// property and the PrepareForShutdown signal. Tests point the agent at it
// with shutdown.Config.BusAddress (or DBUS_SYSTEM_BUS_ADDRESS).
package logindtest

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/prop"
)

const (
	service = "org.freedesktop.login1"
	path    = dbus.ObjectPath("/org/freedesktop/login1")
	iface   = "org.freedesktop.login1.Manager"
)

// Lock is one Inhibit call.
type Lock struct {
	What, Who, Why, Mode string
	// HandedOver is closed once the client holds the lock's descriptor and
	// the stand-in closed its own copy: from then on the client's close
	// alone releases the lock. Wait for it before releasing.
	HandedOver <-chan struct{}
	// Released is closed once every holder closed the lock's descriptor.
	Released <-chan struct{}
}

// Logind is the stand-in, on its own bus.
type Logind struct {
	// Address is the bus, as DBUS_SYSTEM_BUS_ADDRESS takes it.
	Address string

	t        testing.TB
	daemon   string // dbus-daemon's path
	dir      string // socket, configuration and log
	delayMax any    // InhibitDelayMaxUSec
	cmd      *exec.Cmd
	conn     *dbus.Conn

	mu     sync.Mutex
	locks  []Lock
	taken  chan struct{} // signaled on every Inhibit
	refuse bool
}

// Start runs dbus-daemon on a socket in a temp dir with a logind stand-in
// whose InhibitDelayMaxUSec is delayMax; t.Cleanup stops both. It skips the
// test, saying why, when dbus-daemon is not installed.
func Start(t testing.TB, delayMax time.Duration) *Logind {
	t.Helper()
	return StartWithDelayValue(t, uint64(delayMax/time.Microsecond))
}

// StartWithDelayValue is Start with InhibitDelayMaxUSec set to any value,
// of any D-Bus type (logind's is a uint64), for hostile tests.
func StartWithDelayValue(t testing.TB, inhibitDelayMaxUSec any) *Logind {
	t.Helper()
	daemon, err := exec.LookPath("dbus-daemon")
	if err != nil {
		t.Skip("dbus-daemon is not installed (apt-get install dbus-daemon): the graceful shutdown tests need a real D-Bus")
	}
	dir, err := os.MkdirTemp("", "logindtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	l := &Logind{t: t, daemon: daemon, dir: dir, delayMax: inhibitDelayMaxUSec, taken: make(chan struct{}, 64)}
	l.Address = "unix:path=" + filepath.Join(dir, "bus.sock")
	if err := os.WriteFile(filepath.Join(dir, "bus.conf"), []byte(fmt.Sprintf(busConfig, filepath.Join(dir, "bus.sock"))), 0o644); err != nil {
		t.Fatal(err)
	}
	l.startBus()
	t.Cleanup(l.stopBus)
	return l
}

// RestartBus stops the bus daemon (every client loses its connection, and
// so its lock) and starts a new one on the same socket, logind on it again.
func (l *Logind) RestartBus() {
	l.t.Helper()
	l.stopBus()
	_ = os.Remove(filepath.Join(l.dir, "bus.sock"))
	l.startBus()
}

func (l *Logind) stopBus() {
	if l.conn != nil {
		_ = l.conn.Close()
	}
	if l.cmd != nil {
		_ = l.cmd.Process.Kill()
		_ = l.cmd.Wait()
		l.cmd = nil
	}
}

// startBus runs dbus-daemon and puts the stand-in on it.
func (l *Logind) startBus() {
	t := l.t
	t.Helper()
	sock := filepath.Join(l.dir, "bus.sock")
	logFile, err := os.Create(filepath.Join(l.dir, "dbus-daemon.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(l.daemon, "--config-file="+filepath.Join(l.dir, "bus.conf"), "--nofork", "--nopidfile")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start dbus-daemon: %v", err)
	}
	l.cmd = cmd
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("unix", sock)
		if err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(logFile.Name())
			t.Fatalf("dbus-daemon does not listen on %s: %v; its output: %s", sock, err, out)
		}
		time.Sleep(10 * time.Millisecond)
	}
	l.conn, err = dbus.Connect(l.Address)
	if err != nil {
		t.Fatalf("connect to the test bus: %v", err)
	}
	if err := l.conn.Export(&manager{l}, path, iface); err != nil {
		t.Fatal(err)
	}
	if _, err := prop.Export(l.conn, path, prop.Map{iface: {
		"InhibitDelayMaxUSec": {Value: l.delayMax, Emit: prop.EmitFalse},
	}}); err != nil {
		t.Fatal(err)
	}
	reply, err := l.conn.RequestName(service, dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("claim %s on the test bus: %v (reply %d)", service, err, reply)
	}
}

// busConfig lets anyone on the private bus own and call anything.
const busConfig = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>custom</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
`

// Vanish takes logind off the bus (the bus stays): as a system bus
// without systemd-logind.
func (l *Logind) Vanish() error {
	_, err := l.conn.ReleaseName(service)
	return err
}

// PrepareForShutdown emits logind's signal.
func (l *Logind) PrepareForShutdown(active bool) error {
	return l.conn.Emit(path, iface+".PrepareForShutdown", active)
}

// Emit sends any signal of logind's interface (for hostile tests).
func (l *Logind) Emit(member string, values ...any) error {
	return l.conn.Emit(path, iface+"."+member, values...)
}

// RefuseInhibit makes Inhibit fail from now on.
func (l *Logind) RefuseInhibit() {
	l.mu.Lock()
	l.refuse = true
	l.mu.Unlock()
}

// Locks are the Inhibit calls so far.
func (l *Logind) Locks() []Lock {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Lock(nil), l.locks...)
}

// WaitLock waits for the n-th (1-based) Inhibit call.
func (l *Logind) WaitLock(t testing.TB, n int, timeout time.Duration) Lock {
	t.Helper()
	deadline := time.After(timeout)
	for {
		if locks := l.Locks(); len(locks) >= n {
			return locks[n-1]
		}
		select {
		case <-l.taken:
		case <-deadline:
			t.Fatalf("no Inhibit call #%d within %s", n, timeout)
		}
	}
}

type manager struct{ l *Logind }

// Inhibit answers as logind: the write end of a pipe whose read end is
// watched; the lock is released when every copy of the write end is closed.
func (m *manager) Inhibit(what, who, why, mode string) (dbus.UnixFD, *dbus.Error) {
	m.l.mu.Lock()
	refuse := m.l.refuse
	m.l.mu.Unlock()
	if refuse {
		return 0, dbus.NewError("org.freedesktop.DBus.Error.AccessDenied", []any{"inhibitor locks refused by the test"})
	}
	r, w, err := os.Pipe()
	if err != nil {
		return 0, dbus.MakeFailedError(err)
	}
	released := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, r) // EOF: every write end is closed
		_ = r.Close()
		close(released)
	}()
	fd := w.Fd() // before any goroutine may close w
	handedOver := make(chan struct{})
	go func() {
		closeOnceSent(w, fd)
		close(handedOver)
	}()
	m.l.mu.Lock()
	m.l.locks = append(m.l.locks, Lock{What: what, Who: who, Why: why, Mode: mode, HandedOver: handedOver, Released: released})
	m.l.mu.Unlock()
	select {
	case m.l.taken <- struct{}{}:
	default:
	}
	return dbus.UnixFD(fd), nil
}

// closeOnceSent closes our copy of the lock's write end once another copy
// exists in some process (the reply carrying it was sent: the bus daemon or
// the client holds one), so that the client's close alone releases the
// lock. The D-Bus library sends the reply after Inhibit returns and gives
// no hook once it is out.
func closeOnceSent(w *os.File, fd uintptr) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(fd), &st); err != nil {
		_ = w.Close()
		return
	}
	target := fmt.Sprintf("pipe:[%d]", st.Ino)
	ours := fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), fd)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && !otherCopy(target, ours) {
		time.Sleep(2 * time.Millisecond)
	}
	_ = w.Close()
}

// otherCopy reports whether a process holds a descriptor of target other
// than ours (and the read end, which is opened O_RDONLY).
func otherCopy(target, ours string) bool {
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if fd == ours {
			continue
		}
		if l, err := os.Readlink(fd); err != nil || l != target {
			continue
		}
		info, err := os.ReadFile(strings.Replace(fd, "/fd/", "/fdinfo/", 1))
		if err == nil && writeOnly(string(info)) {
			return true
		}
	}
	return false
}

// writeOnly reads the flags line of an fdinfo file: O_WRONLY is 01.
func writeOnly(fdinfo string) bool {
	for _, line := range strings.Split(fdinfo, "\n") {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			var flags int
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%o", &flags); err == nil {
				return flags&syscall.O_ACCMODE == syscall.O_WRONLY
			}
		}
	}
	return false
}
