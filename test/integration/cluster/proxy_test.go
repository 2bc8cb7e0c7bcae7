package cluster

import (
	"io"
	"net"
	"sync"
	"testing"
)

// uplink is a TCP proxy standing for an edge node's WAN link to the hub:
// Cut drops every connection through it and refuses new ones until Restore.
type uplink struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func newUplink(t *testing.T, target string) *uplink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &uplink{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	u.wg.Add(1)
	go u.accept()
	t.Cleanup(u.close)
	return u
}

func (u *uplink) addr() string { return u.ln.Addr().String() }

func (u *uplink) accept() {
	defer u.wg.Done()
	for {
		c, err := u.ln.Accept()
		if err != nil {
			return
		}
		u.mu.Lock()
		if u.cut {
			u.mu.Unlock()
			c.Close()
			continue
		}
		u.mu.Unlock()
		up, err := net.Dial("tcp", u.target)
		if err != nil {
			c.Close()
			continue
		}
		u.mu.Lock()
		if u.cut { // cut while dialing
			u.mu.Unlock()
			c.Close()
			up.Close()
			continue
		}
		u.conns[c], u.conns[up] = struct{}{}, struct{}{}
		u.mu.Unlock()
		u.wg.Add(2)
		go u.pipe(c, up)
		go u.pipe(up, c)
	}
}

func (u *uplink) pipe(dst, src net.Conn) {
	defer u.wg.Done()
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
	u.mu.Lock()
	delete(u.conns, dst)
	delete(u.conns, src)
	u.mu.Unlock()
}

// Cut drops the link.
func (u *uplink) Cut() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.cut = true
	for c := range u.conns {
		c.Close()
	}
}

// Restore lets connections through again.
func (u *uplink) Restore() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.cut = false
}

func (u *uplink) close() {
	u.Cut()
	u.ln.Close()
	u.wg.Wait()
}
