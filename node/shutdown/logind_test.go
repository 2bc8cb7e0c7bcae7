package shutdown_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/actorlet/actorlet/node/shutdown"
	"github.com/actorlet/actorlet/node/shutdown/logindtest"
)

func open(t *testing.T, addr string) *shutdown.Inhibitor {
	t.Helper()
	i, err := shutdown.Open(shutdown.Config{BusAddress: addr, Who: "actorlet-test", Why: "testing"})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(i.Close)
	return i
}

func handedOver(t *testing.T, lock logindtest.Lock) {
	t.Helper()
	select {
	case <-lock.HandedOver:
	case <-time.After(10 * time.Second):
		t.Fatal("the lock's descriptor did not reach the client within 10s")
	}
}

func event(t *testing.T, i *shutdown.Inhibitor) bool {
	t.Helper()
	select {
	case v, ok := <-i.Events():
		if !ok {
			t.Fatal("events closed")
		}
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("no PrepareForShutdown event within 10s")
	}
	return false
}

// TestInhibitorOnRealBus: against a real dbus-daemon, the inhibitor reads
// InhibitDelayMaxUSec, takes a delay lock for shutdown, reports
// PrepareForShutdown, ignores a malformed one, and its Release lets the
// lock go (the logind side sees every copy of the descriptor closed).
func TestInhibitorOnRealBus(t *testing.T) {
	l := logindtest.Start(t, 45*time.Second)
	i := open(t, l.Address)
	if got := i.InhibitDelayMax(); got != 45*time.Second {
		t.Fatalf("InhibitDelayMax = %s, want 45s", got)
	}
	lock := l.WaitLock(t, 1, 10*time.Second)
	if lock.What != "shutdown" || lock.Mode != "delay" || lock.Who != "actorlet-test" || lock.Why != "testing" {
		t.Fatalf("lock = %+v, want shutdown/delay by actorlet-test", lock)
	}
	// Hostile: a PrepareForShutdown with a string, and one with two
	// values, are dropped; the valid one after them arrives.
	if err := l.Emit("PrepareForShutdown", "yes"); err != nil {
		t.Fatal(err)
	}
	if err := l.Emit("PrepareForShutdown", true, true); err != nil {
		t.Fatal(err)
	}
	if err := l.PrepareForShutdown(true); err != nil {
		t.Fatal(err)
	}
	if !event(t, i) {
		t.Fatal("PrepareForShutdown(true) reported as false")
	}
	handedOver(t, lock)
	select {
	case <-lock.Released:
		t.Fatal("lock released before Release")
	default:
	}
	if err := i.Release(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lock.Released:
	case <-time.After(10 * time.Second):
		t.Fatal("lock not released 10s after Release")
	}
	// A canceled shutdown: the lock is taken again.
	if err := l.PrepareForShutdown(false); err != nil {
		t.Fatal(err)
	}
	if event(t, i) {
		t.Fatal("PrepareForShutdown(false) reported as true")
	}
	if err := i.Acquire(); err != nil {
		t.Fatal(err)
	}
	l.WaitLock(t, 2, 10*time.Second)
}

// TestInhibitorUnavailable: no bus, a bus without logind, a logind whose
// InhibitDelayMaxUSec is not a uint64, and a logind refusing the lock each
// give ErrUnavailable with the reason.
func TestInhibitorUnavailable(t *testing.T) {
	_, err := shutdown.Open(shutdown.Config{BusAddress: "unix:path=" + filepath.Join(t.TempDir(), "none.sock")})
	if !errors.Is(err, shutdown.ErrUnavailable) {
		t.Fatalf("no bus: err = %v, want ErrUnavailable", err)
	}
	gone := logindtest.Start(t, time.Second)
	if err := gone.Vanish(); err != nil {
		t.Fatal(err)
	}
	_, err = shutdown.Open(shutdown.Config{BusAddress: gone.Address})
	if !errors.Is(err, shutdown.ErrUnavailable) || !strings.Contains(err.Error(), "InhibitDelayMaxUSec") {
		t.Fatalf("no logind: err = %v, want ErrUnavailable reading InhibitDelayMaxUSec", err)
	}
	odd := logindtest.StartWithDelayValue(t, "forever")
	_, err = shutdown.Open(shutdown.Config{BusAddress: odd.Address})
	if !errors.Is(err, shutdown.ErrUnavailable) || !strings.Contains(err.Error(), "want a uint64") {
		t.Fatalf("string InhibitDelayMaxUSec: err = %v, want ErrUnavailable naming the type", err)
	}
	l := logindtest.Start(t, time.Second)
	l.RefuseInhibit()
	_, err = shutdown.Open(shutdown.Config{BusAddress: l.Address})
	if !errors.Is(err, shutdown.ErrUnavailable) {
		t.Fatalf("lock refused: err = %v, want ErrUnavailable", err)
	}
	t.Logf("refused: %v", err)
}
