package procruntime

import (
	"io"
	"testing"
)

// TestCappedBufferReadFrom: io.Copy must go through Write (and the cap),
// not a ReadFrom promoted from an embedded bytes.Buffer.
func TestCappedBufferReadFrom(t *testing.T) {
	b := &cappedBuffer{max: 10}
	n, err := io.Copy(b, io.LimitReader(zeroReader{}, 1000))
	if err != nil || n != 1000 || len(b.Bytes()) != 10 || !b.truncated {
		t.Errorf("io.Copy into cappedBuffer = %d, %v; kept %d truncated %v, want 1000 read, 10 kept, truncated", n, err, len(b.Bytes()), b.truncated)
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
