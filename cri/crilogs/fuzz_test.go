package crilogs

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzTail: whatever a container wrote to its log (binary, no final
// newline, empty lines), Tail(path, n) gives exactly its last n lines (an
// unterminated last line counts, as in the kubelet), all of it for
// n < 0. Seeds: the shapes of TestTailStart. `make fuzz` runs it briefly;
// explore with `go test -run=^$ -fuzz=FuzzTail ./cri/crilogs/`.
func FuzzTail(f *testing.F) {
	for _, s := range []string{"", "\n", "\n\n", "a", "a\n", "a\nb", "a\n\nb\n", "2024-01-02T03:04:05Z stdout F x\n",
		"\x00\xff\n\r\n", string(bytes.Repeat([]byte("line\n"), 3000))} {
		f.Add([]byte(s), int64(1))
		f.Add([]byte(s), int64(3))
	}
	f.Add([]byte("a\nb\n"), int64(-1))
	f.Add([]byte("a\nb\n"), int64(0))
	f.Fuzz(func(t *testing.T, content []byte, n int64) {
		if n > 1<<20 {
			n %= 1 << 20
		}
		path := filepath.Join(t.TempDir(), "0.log")
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := Tail(path, n)
		if err != nil {
			t.Fatalf("Tail(%d): %v", n, err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if want := lastLines(content, n); !bytes.Equal(got, want) {
			t.Fatalf("Tail(%q, %d) = %q, want %q", content, n, got, want)
		}
	})
}

// lastLines is the model: the last n lines of b, each with its newline.
func lastLines(b []byte, n int64) []byte {
	if n < 0 {
		return b
	}
	var lines [][]byte
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			lines = append(lines, b)
			break
		}
		lines = append(lines, b[:i+1])
		b = b[i+1:]
	}
	if int64(len(lines)) > n {
		lines = lines[int64(len(lines))-n:]
	}
	return bytes.Join(lines, nil)
}
