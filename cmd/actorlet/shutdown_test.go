package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/actorlet/actorlet/node/shutdown/logindtest"
)

// TestSystemShutdownEndsTheAgent: the agent as main runs it finds logind
// through DBUS_SYSTEM_BUS_ADDRESS, holds its delay lock, and on
// PrepareForShutdown(true) releases it and exits 0.
func TestSystemShutdownEndsTheAgent(t *testing.T) {
	l := logindtest.Start(t, time.Minute)
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", l.Address)
	dir := t.TempDir()
	code := make(chan int, 1)
	go func() {
		code <- realMain([]string{"--root-dir", filepath.Join(dir, "root"), "--node-name", "shutdown-test",
			"--nats-port=-1", "--healthz-port=0", "--shutdown-grace-period=10s", "--shutdown-grace-period-critical-pods=5s", "--cgroups-per-qos=false"})
	}()
	var lock logindtest.Lock
	select {
	case c := <-code:
		t.Fatalf("actorlet exited with %d before taking the lock", c)
	case <-waitLock(l):
		locks := l.Locks()
		if len(locks) == 0 {
			t.Fatal("actorlet took no inhibitor lock within 60s")
		}
		lock = locks[0]
	}
	select {
	case <-lock.HandedOver:
	case <-time.After(30 * time.Second):
		t.Fatal("the agent does not hold the lock")
	}
	if err := l.PrepareForShutdown(true); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("actorlet exited with %d after the shutdown, want 0", c)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("actorlet did not exit within 60s of PrepareForShutdown(true)")
	}
	select {
	case <-lock.Released:
	case <-time.After(10 * time.Second):
		t.Fatal("the lock was not released")
	}
}

// waitLock is closed once logind got an Inhibit call, or after 60 s.
func waitLock(l *logindtest.Logind) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		deadline := time.Now().Add(60 * time.Second)
		for len(l.Locks()) == 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		close(ch)
	}()
	return ch
}
