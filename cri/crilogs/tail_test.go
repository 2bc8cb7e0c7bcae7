package crilogs

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// writeLines writes lines "<prefix><i>\n" for i in [from, to).
func writeLines(t *testing.T, path, prefix string, from, to int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := from; i < to; i++ {
		fmt.Fprintf(w, "%s%d\n", prefix, i)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func readAll(t *testing.T, r io.ReadCloser) []string {
	t.Helper()
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func TestTailStart(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		content string
		n       int64
		want    string
	}{
		{"a\nb\nc\n", 1, "c\n"},
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc\n", 3, "a\nb\nc\n"},
		{"a\nb\nc\n", 10, "a\nb\nc\n"},
		{"a\nb\nc", 1, "c"},
		{"a\nb\nc", 2, "b\nc"},
		{"", 3, ""},
		{"a\nb\n", 0, ""},
	} {
		path := filepath.Join(dir, "log")
		if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Tail(path, tc.n)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r)
		r.Close()
		if string(b) != tc.want {
			t.Errorf("Tail(%q, %d) = %q, want %q", tc.content, tc.n, b, tc.want)
		}
	}
}

// TestTailBoundedMemory: the last 2 lines of a 64 MB log cost a few
// blocks, not the file (the logs command used to read it all: a
// tailLines: 2 request on a 335 MB log took +560 MB).
func TestTailBoundedMemory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Repeat("x", 1023) + "\n"
	block := strings.Repeat(line, 1024)
	for i := 0; i < 64; i++ {
		if _, err := f.WriteString(block); err != nil {
			t.Fatal(err)
		}
	}
	fmt.Fprintf(f, "second to last\nlast\n")
	f.Close()

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r, err := Tail(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(t, r)
	runtime.ReadMemStats(&after)
	if len(got) != 2 || got[0] != "second to last" || got[1] != "last" {
		t.Fatalf("Tail 2 = %q", got)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Errorf("Tail of 2 lines of a 64 MB file allocated %d bytes, want well under 4 MiB", alloc)
	}
}

// TestTailAcrossRotatedFiles: a tail longer than the current file takes
// the rest from the rotated files, newest first, compressed or not.
func TestTailAcrossRotatedFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	writeLines(t, path+".20260101-000001", "l", 0, 100)
	gzipFile(t, path+".20260101-000001")
	writeLines(t, path+".20260101-000002", "l", 100, 200)
	writeLines(t, path, "l", 200, 250)
	if err := os.WriteFile(path+".20260101-000003.gz.tmp", []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		n         int64
		first     string
		wantLines int
	}{
		{10, "l240", 10},
		{50, "l200", 50},
		{120, "l130", 120},
		{220, "l30", 220},
		{1000, "l0", 250},
	} {
		r, err := Tail(path, tc.n)
		if err != nil {
			t.Fatal(err)
		}
		got := readAll(t, r)
		if len(got) != tc.wantLines || got[0] != tc.first || got[len(got)-1] != "l249" {
			t.Errorf("Tail %d: %d lines %q..%q, want %d lines from %s to l249", tc.n, len(got), first(got), last(got), tc.wantLines, tc.first)
			continue
		}
		for i := 1; i < len(got); i++ {
			if got[i] != fmt.Sprintf("l%d", 250-len(got)+i) {
				t.Errorf("Tail %d: line %d = %q", tc.n, i, got[i])
				break
			}
		}
	}
	// Without a tail: the current file only, as the kubelet reads it.
	r, err := Tail(path, -1)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, r); len(got) != 50 || got[0] != "l200" {
		t.Errorf("Tail -1: %d lines from %q, want the current file's 50 from l200", len(got), first(got))
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func last(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}

func gzipFile(t *testing.T, path string) {
	t.Helper()
	if err := compress(path); err != nil {
		t.Fatal(err)
	}
	// Sanity: readable.
	f, err := os.Open(path + compressSuffix)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := gzip.NewReader(f); err != nil {
		t.Fatal(err)
	}
}

// TestFollowAcrossRotation: a follower reads the tail, then new lines,
// then goes on in the new file once the old one is rotated away, with
// nothing lost or repeated, in batches of at most max bytes.
func TestFollowAcrossRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	writeLines(t, path+".20260101-000001", "l", 0, 10)
	writeLines(t, path, "l", 10, 20)
	fl, err := Follow(path, 15)
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	var got []string
	drain := func() {
		for {
			b, err := fl.Next(16)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) > 16 {
				t.Fatalf("Next(16) returned %d bytes", len(b))
			}
			if len(b) == 0 {
				return
			}
			got = append(got, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")...)
		}
	}
	drain()
	writeLines(t, path, "l", 20, 30)
	drain()
	// Rotate: rename, a few more lines land in the old file, then the
	// new file appears.
	if err := os.Rename(path, path+".20260101-000002"); err != nil {
		t.Fatal(err)
	}
	drain()
	writeLines(t, path+".20260101-000002", "l", 30, 35)
	writeLines(t, path, "l", 35, 40)
	drain()
	// An unterminated line is held back until Rest.
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	_, _ = f.WriteString("partial")
	f.Close()
	drain()
	if len(got) != 35 || got[0] != "l5" || got[34] != "l39" {
		t.Fatalf("followed %d lines %q..%q, want 35 from l5 to l39", len(got), first(got), last(got))
	}
	for i := range got {
		if got[i] != fmt.Sprintf("l%d", 5+i) {
			t.Fatalf("line %d = %q, want l%d", i, got[i], 5+i)
		}
	}
	if rest := string(fl.Rest()); rest != "partial" {
		t.Errorf("Rest = %q, want the unterminated line", rest)
	}
}
