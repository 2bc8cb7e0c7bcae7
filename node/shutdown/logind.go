// Package shutdown is the node's side of a system shutdown: a
// systemd-logind delay inhibitor lock held over D-Bus, and logind's
// PrepareForShutdown signal, as the kubelet's nodeshutdown manager uses
// them. The agent (node/agent) turns the signal into a StartNodeShutdown
// for the sync loop and releases the lock once the pods are terminated.
package shutdown

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
)

// logind's D-Bus names.
const (
	logindService   = "org.freedesktop.login1"
	logindPath      = dbus.ObjectPath("/org/freedesktop/login1")
	logindInterface = "org.freedesktop.login1.Manager"
	// DefaultSystemBus is the system bus when DBUS_SYSTEM_BUS_ADDRESS is
	// not set.
	DefaultSystemBus = "unix:path=/var/run/dbus/system_bus_socket"
)

// callTimeout bounds every D-Bus call (connecting included).
const callTimeout = 10 * time.Second

// signalBuffer is how many signals wait for the reader; more are dropped by
// the D-Bus library (logind sends one per shutdown).
const signalBuffer = 16

// ErrUnavailable wraps every reason graceful shutdown cannot work: no
// system bus, no logind on it, no lock granted.
var ErrUnavailable = errors.New("graceful node shutdown unavailable")

// Config says where logind is and who asks for the lock.
type Config struct {
	// BusAddress is the system bus (default: DBUS_SYSTEM_BUS_ADDRESS, else
	// DefaultSystemBus).
	BusAddress string
	// Who and Why are shown by systemd-inhibit --list.
	Who, Why string
}

// Inhibitor holds logind's delay lock for shutdowns and reports its
// PrepareForShutdown signals.
type Inhibitor struct {
	conn     *dbus.Conn
	obj      dbus.BusObject
	cfg      Config
	delayMax time.Duration
	events   chan bool

	mu   sync.Mutex
	lock *os.File // nil: not held

	done chan struct{}
}

// Open connects to the system bus, reads logind's InhibitDelayMaxUSec,
// subscribes to PrepareForShutdown and takes the delay lock. An error
// wraps ErrUnavailable with the reason.
func Open(cfg Config) (*Inhibitor, error) {
	addr := cfg.BusAddress
	if addr == "" {
		addr = os.Getenv("DBUS_SYSTEM_BUS_ADDRESS")
	}
	if addr == "" {
		addr = DefaultSystemBus
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	conn, err := connect(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("%w: connect to the system bus %s: %v", ErrUnavailable, addr, err)
	}
	i := &Inhibitor{conn: conn, obj: conn.Object(logindService, logindPath), cfg: cfg,
		events: make(chan bool, signalBuffer), done: make(chan struct{})}
	fail := func(err error) (*Inhibitor, error) {
		_ = conn.Close()
		return nil, err
	}
	var v dbus.Variant
	if err := i.obj.CallWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0, logindInterface, "InhibitDelayMaxUSec").Store(&v); err != nil {
		return fail(fmt.Errorf("%w: read logind's InhibitDelayMaxUSec on %s: %v", ErrUnavailable, addr, err))
	}
	usec, ok := v.Value().(uint64)
	if !ok {
		return fail(fmt.Errorf("%w: logind's InhibitDelayMaxUSec is %s, want a uint64", ErrUnavailable, v.Signature()))
	}
	i.delayMax = time.Duration(min(usec, uint64(1<<63-1)/1000)) * time.Microsecond
	if err := conn.AddMatchSignalContext(ctx, dbus.WithMatchSender(logindService), dbus.WithMatchInterface(logindInterface), dbus.WithMatchMember("PrepareForShutdown"),
		dbus.WithMatchObjectPath(logindPath)); err != nil {
		return fail(fmt.Errorf("%w: subscribe to PrepareForShutdown: %v", ErrUnavailable, err))
	}
	signals := make(chan *dbus.Signal, signalBuffer)
	conn.Signal(signals)
	if err := i.Acquire(); err != nil {
		return fail(err)
	}
	go i.watch(signals)
	return i, nil
}

// connect dials and authenticates within ctx (a bus that accepts the
// connection and never answers must not hang the agent's start).
func connect(ctx context.Context, addr string) (*dbus.Conn, error) {
	type result struct {
		conn *dbus.Conn
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := dbus.Connect(addr)
		ch <- result{c, err}
	}()
	select {
	case r := <-ch:
		return r.conn, r.err
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.conn != nil {
				_ = r.conn.Close()
			}
		}()
		return nil, fmt.Errorf("no answer within %s", callTimeout)
	}
}

// InhibitDelayMax is logind's InhibitDelayMaxSec: the longest a delay lock
// holds a shutdown back.
func (i *Inhibitor) InhibitDelayMax() time.Duration { return i.delayMax }

// Events delivers PrepareForShutdown's argument: true when a shutdown
// begins, false when it was canceled. It is closed when the connection
// ends.
func (i *Inhibitor) Events() <-chan bool { return i.events }

// Acquire takes the delay lock unless it is held.
func (i *Inhibitor) Acquire() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.lock != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	var fd dbus.UnixFD
	if err := i.obj.CallWithContext(ctx, logindInterface+".Inhibit", 0, "shutdown", i.cfg.Who, i.cfg.Why, "delay").Store(&fd); err != nil {
		return fmt.Errorf("%w: take logind's delay inhibitor lock: %v", ErrUnavailable, err)
	}
	i.lock = os.NewFile(uintptr(fd), "logind-inhibitor")
	return nil
}

// Release lets the shutdown proceed: it closes the lock's descriptor.
func (i *Inhibitor) Release() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.lock == nil {
		return nil
	}
	err := i.lock.Close()
	i.lock = nil
	return err
}

// Close releases the lock and ends the connection.
func (i *Inhibitor) Close() {
	_ = i.Release()
	_ = i.conn.Close()
	<-i.done
}

// watch forwards PrepareForShutdown signals until the connection ends.
func (i *Inhibitor) watch(signals <-chan *dbus.Signal) {
	defer close(i.done)
	defer close(i.events)
	for s := range signals {
		if s.Name != logindInterface+".PrepareForShutdown" || s.Path != logindPath {
			continue
		}
		if len(s.Body) != 1 {
			continue
		}
		active, ok := s.Body[0].(bool)
		if !ok {
			continue
		}
		select {
		case i.events <- active:
		default: // the reader is behind; logind sends one per shutdown
		}
	}
}
