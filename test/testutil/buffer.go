package testutil

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// SyncBuffer is a bytes.Buffer that one goroutine (a stream, a process's
// output) writes while the test reads it. The zero value is ready to use.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Len returns how many bytes were written so far.
func (b *SyncBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

// WaitFor waits until the output contains s, or fails t after timeout.
func (b *SyncBuffer) WaitFor(t testing.TB, timeout time.Duration, s string) {
	t.Helper()
	Until(t, timeout, strconv.Quote(s)+" in the output", func() bool { return strings.Contains(b.String(), s) })
}
