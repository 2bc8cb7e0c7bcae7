package crilogs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// Follower reads a log as it grows: first the last n lines (as Tail), then
// whatever is appended. Each Next returns at most max bytes of whole
// lines. When the file it reads is rotated away (the path names another
// file), it reads the old one to its end, then goes on with the new one.
type Follower struct {
	path    string
	prefix  io.Reader // rotated files' part of the tail, then nil
	f       *os.File
	off     int64
	pending []byte // an incomplete last line
	closers []io.Closer
}

// Follow opens the log at path for following from its last n lines (n < 0:
// from the start of the current file).
func Follow(path string, n int64) (*Follower, error) {
	t, err := openTail(path, n)
	if err != nil {
		return nil, err
	}
	fl := &Follower{path: path, f: t.current, off: t.start, closers: t.closers[1:]}
	if len(t.rotated) > 0 {
		fl.prefix = io.MultiReader(t.rotated...)
	}
	return fl, nil
}

// Close closes the files.
func (fl *Follower) Close() error {
	errs := []error{fl.f.Close()}
	for _, c := range fl.closers {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// Next returns the whole lines available now, at most max bytes of them
// (a single line longer than max is returned cut). It returns no data and
// no error when there is nothing new.
func (fl *Follower) Next(max int) ([]byte, error) {
	buf := make([]byte, max)
	n := copy(buf, fl.pending)
	fl.pending = nil
	for n < max {
		k, err := fl.read(buf[n:])
		n += k
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	data := buf[:n]
	if n == max && bytes.IndexByte(data, '\n') < 0 {
		return data, nil // one overlong line: return it cut
	}
	if i := bytes.LastIndexByte(data, '\n'); i+1 < len(data) {
		fl.pending = append([]byte(nil), data[i+1:]...)
		data = data[:i+1]
	}
	return data, nil
}

// Rest returns an unterminated last line held back by Next, once the
// writer is known to be done.
func (fl *Follower) Rest() []byte {
	r := fl.pending
	fl.pending = nil
	return r
}

// read reads from the prefix, then the current file; at the end of the
// current file it switches to a rotated-in successor.
func (fl *Follower) read(p []byte) (int, error) {
	if fl.prefix != nil {
		k, err := fl.prefix.Read(p)
		if errors.Is(err, io.EOF) {
			fl.prefix = nil
			err = nil
		}
		return k, err
	}
	k, err := fl.f.ReadAt(p, fl.off)
	fl.off += int64(k)
	if k > 0 || !errors.Is(err, io.EOF) {
		if errors.Is(err, io.EOF) {
			err = nil
		}
		return k, err
	}
	// At the end: has the file been rotated away?
	rotated, err := fl.rotated()
	if err != nil || !rotated {
		return 0, io.EOF
	}
	// Drain what was written to the old file before the reopen.
	if k, err := fl.f.ReadAt(p, fl.off); k > 0 {
		fl.off += int64(k)
		return k, nil
	} else if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	nf, err := os.Open(fl.path)
	if err != nil {
		return 0, io.EOF // between the rename and the reopen: try later
	}
	_ = fl.f.Close()
	fl.f, fl.off = nf, 0
	return 0, nil
}

// rotated reports whether the path now names another file than the one
// being read.
func (fl *Follower) rotated() (bool, error) {
	cur, err := os.Stat(fl.path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil // renamed, not reopened yet
	}
	if err != nil {
		return false, fmt.Errorf("stat %s: %w", fl.path, err)
	}
	mine, err := fl.f.Stat()
	if err != nil {
		return false, fmt.Errorf("stat %s: %w", fl.f.Name(), err)
	}
	return !os.SameFile(cur, mine), nil
}
