package crilogs

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// blockSize is how much Tail reads at a time, going backwards.
const blockSize = 32 << 10

// compressSuffix and tmpSuffix name rotated files as the kubelet does.
const (
	compressSuffix = ".gz"
	tmpSuffix      = ".tmp"
)

// RotatedFiles lists the rotated files of the log at path, oldest first:
// <path>.<timestamp>, possibly gzip-compressed (.gz). Work files (.tmp)
// are left out.
func RotatedFiles(path string) ([]string, error) {
	matches, err := filepath.Glob(globEscape(path) + ".*")
	if err != nil {
		return nil, fmt.Errorf("list rotated logs of %s: %w", path, err)
	}
	out := matches[:0]
	for _, m := range matches {
		if !strings.HasSuffix(m, tmpSuffix) {
			out = append(out, m)
		}
	}
	// The timestamp (20060102-150405) sorts in time order; a compressed
	// file sorts after its uncompressed twin, which cleanup removes.
	sort.Strings(out)
	return out, nil
}

func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Tail returns a reader of the last n lines of the log at path (n < 0: the
// whole current file, as the kubelet reads a log without tailLines). When
// the current file holds fewer than n lines, the rotated files supply the
// rest, newest first. Memory stays bounded whatever the sizes: plain files
// are read backwards block by block, compressed ones streamed twice.
// The reader must be closed.
func Tail(path string, n int64) (io.ReadCloser, error) {
	t, err := openTail(path, n)
	if err != nil {
		return nil, err
	}
	parts := append(t.rotated, io.NewSectionReader(t.current, t.start, 1<<62))
	return &multiReadCloser{Reader: io.MultiReader(parts...), closers: t.closers}, nil
}

// tail is where the last n lines of a log are: the parts of rotated files,
// oldest first, then the current file from start.
type tail struct {
	rotated []io.Reader
	current *os.File
	start   int64
	closers []io.Closer // current first
}

func (t *tail) close() {
	for _, c := range t.closers {
		_ = c.Close()
	}
}

func openTail(path string, n int64) (*tail, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	t := &tail{current: f, closers: []io.Closer{f}}
	if n < 0 {
		return t, nil
	}
	start, found, err := tailStart(f, n)
	if err != nil {
		t.close()
		return nil, fmt.Errorf("tail %s: %w", path, err)
	}
	t.start = start
	if found >= n {
		return t, nil
	}
	rotated, err := RotatedFiles(path)
	if err != nil {
		t.close()
		return nil, err
	}
	for i := len(rotated) - 1; i >= 0 && found < n; i-- {
		r, c, got, err := tailRotated(rotated[i], n-found)
		if errors.Is(err, os.ErrNotExist) {
			continue // removed by rotation meanwhile
		}
		if err != nil {
			t.close()
			return nil, fmt.Errorf("tail %s: %w", rotated[i], err)
		}
		t.closers = append(t.closers, c)
		t.rotated = append([]io.Reader{r}, t.rotated...)
		found += got
	}
	return t, nil
}

type multiReadCloser struct {
	io.Reader
	closers []io.Closer
}

func (m *multiReadCloser) Close() error {
	var errs []error
	for _, c := range m.closers {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// tailRotated returns a reader of the last n lines of a rotated file and
// how many lines it holds (at most n).
func tailRotated(path string, n int64) (io.Reader, io.Closer, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, 0, err
	}
	if !strings.HasSuffix(path, compressSuffix) {
		start, found, err := tailStart(f, n)
		if err != nil {
			_ = f.Close()
			return nil, nil, 0, err
		}
		return io.NewSectionReader(f, start, 1<<62), f, found, nil
	}
	// Compressed: count the lines in a first pass, skip to the last n in
	// the second.
	total, err := countLines(f)
	if err != nil {
		_ = f.Close()
		return nil, nil, 0, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		_ = f.Close()
		return nil, nil, 0, err
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		_ = f.Close()
		return nil, nil, 0, err
	}
	br := bufio.NewReaderSize(zr, blockSize)
	for skip := total - n; skip > 0; skip-- {
		if err := skipLine(br); err != nil {
			_ = f.Close()
			return nil, nil, 0, err
		}
	}
	return br, f, min(n, total), nil
}

func countLines(f *os.File) (int64, error) {
	zr, err := gzip.NewReader(f)
	if err != nil {
		return 0, err
	}
	var total int64
	buf := make([]byte, blockSize)
	var last byte = '\n'
	for {
		k, err := zr.Read(buf)
		total += int64(bytes.Count(buf[:k], []byte{'\n'}))
		if k > 0 {
			last = buf[k-1]
		}
		if errors.Is(err, io.EOF) {
			if last != '\n' {
				total++ // an unterminated last line
			}
			return total, nil
		}
		if err != nil {
			return 0, err
		}
	}
}

func skipLine(br *bufio.Reader) error {
	for {
		_, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
}

// tailStart finds where the last n lines of f start, reading backwards,
// and how many lines there are from there (fewer than n when the file is
// shorter). An unterminated last line counts as a line, as in the
// kubelet's tail.FindTailLineStartIndex.
func tailStart(f *os.File, n int64) (int64, int64, error) {
	info, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	size := info.Size()
	if n == 0 || size == 0 {
		return size, 0, nil
	}
	buf := make([]byte, blockSize)
	var found int64
	end := size
	// The file's last byte: a final newline ends the last line and is not
	// a line boundary to count.
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, size-1); err != nil {
		return 0, 0, err
	}
	if last[0] == '\n' {
		end = size - 1
	}
	for end > 0 {
		off := max(end-blockSize, 0)
		chunk := buf[:end-off]
		if _, err := f.ReadAt(chunk, off); err != nil && !errors.Is(err, io.EOF) {
			return 0, 0, err
		}
		for i := len(chunk) - 1; i >= 0; i-- {
			if chunk[i] == '\n' {
				found++
				if found == n {
					return off + int64(i) + 1, n, nil
				}
			}
		}
		end = off
	}
	return 0, found + 1, nil
}

func globFiles(pattern string) ([]string, error) {
	m, err := filepath.Glob(pattern)
	if err != nil {
		return nil, fmt.Errorf("glob %s: %w", pattern, err)
	}
	return m, nil
}
