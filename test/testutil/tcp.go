package testutil

import (
	"net"
	"testing"
)

// ServeTCP listens on a free port of 127.0.0.1 and runs handle on each
// connection in its own goroutine, closing the connection after it;
// handle nil closes each at once. It returns the port; t.Cleanup closes
// the listener.
func ServeTCP(t testing.TB, handle func(net.Conn)) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if handle != nil {
					handle(c)
				}
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}
