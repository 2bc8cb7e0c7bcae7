package commands

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/actorlet/actorlet/cri/crilogs"
	"github.com/actorlet/actorlet/messages/wire"
)

// CRI log format (kubelet's pkg/kubelet/kuberuntime/logs): every line is
//
//	<RFC3339Nano timestamp> <stdout|stderr> <tags> <content>
//
// where tags is "F" (full line) or "P" (partial: the content continues in the
// stream's next entry, without a newline in between).

// logEntry is one parsed line of a CRI log file.
type logEntry struct {
	Timestamp time.Time
	Stream    string
	Partial   bool
	Content   []byte
}

var errLogFormat = errors.New("unsupported log format")

// parseCRILogLine parses one line (without its trailing newline).
func parseCRILogLine(line []byte) (logEntry, error) {
	var e logEntry
	fields := bytes.SplitN(line, []byte(" "), 4)
	if len(fields) < 3 {
		return e, fmt.Errorf("parse log line %q: %w", truncate(line, 60), errLogFormat)
	}
	ts, err := time.Parse(time.RFC3339Nano, string(fields[0]))
	if err != nil {
		return e, fmt.Errorf("parse log timestamp %q: %w", fields[0], errLogFormat)
	}
	e.Timestamp = ts
	switch s := string(fields[1]); s {
	case "stdout", "stderr":
		e.Stream = s
	default:
		return e, fmt.Errorf("parse log stream %q: %w", s, errLogFormat)
	}
	// Tags are ':'-separated; the first is the line tag.
	tag, _, _ := bytes.Cut(fields[2], []byte(":"))
	switch string(tag) {
	case "F":
	case "P":
		e.Partial = true
	default:
		return e, fmt.Errorf("parse log tag %q: %w", tag, errLogFormat)
	}
	if len(fields) == 4 {
		e.Content = fields[3]
	}
	return e, nil
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// logAssembler joins partial entries of each stream into whole lines and
// formats them for the operator.
type logAssembler struct {
	timestamps bool
	pending    map[string]*bytes.Buffer // stream → partial content so far
	pendingTS  map[string]time.Time     // stream → timestamp of the first part
}

func newLogAssembler(timestamps bool) *logAssembler {
	return &logAssembler{timestamps: timestamps, pending: map[string]*bytes.Buffer{}, pendingTS: map[string]time.Time{}}
}

// add takes one entry and returns the formatted line it completes, if any.
func (a *logAssembler) add(e logEntry) ([]byte, bool) {
	buf, ok := a.pending[e.Stream]
	if !ok {
		buf = &bytes.Buffer{}
		a.pending[e.Stream] = buf
		a.pendingTS[e.Stream] = e.Timestamp
	}
	buf.Write(e.Content)
	if e.Partial {
		return nil, false
	}
	ts := a.pendingTS[e.Stream]
	delete(a.pending, e.Stream)
	delete(a.pendingTS, e.Stream)
	var out []byte
	if a.timestamps {
		out = append(out, ts.Format(time.RFC3339Nano)...)
		out = append(out, ' ')
	}
	out = append(out, buf.Bytes()...)
	out = append(out, '\n')
	return out, true
}

// flush returns what is left of unfinished partial lines (the file ended
// mid-line: the container is gone), as lines.
func (a *logAssembler) flush() [][]byte {
	var out [][]byte
	for _, s := range []string{"stdout", "stderr"} {
		if _, ok := a.pending[s]; ok {
			line, _ := a.add(logEntry{Stream: s, Timestamp: a.pendingTS[s]})
			out = append(out, line)
		}
	}
	return out
}

// logReader reads a CRI log incrementally, in bounded batches, from the
// start of its last tailLines file lines (across rotated files, as
// crilogs.Follow reads them): every call to next returns the whole lines
// written since the previous call, at most max bytes of the file's worth.
type logReader struct {
	fl      *crilogs.Follower
	asm     *logAssembler
	skipped int // malformed lines skipped
}

// openLogReader opens the log at path from its last tail lines (tail < 0:
// the whole current file). As the kubelet, tail counts the file's lines
// (a long line split in partial records counts once per record).
func openLogReader(path string, tail int64, timestamps bool) (*logReader, error) {
	fl, err := crilogs.Follow(path, tail)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, wire.NotFound("log file %q", path)
		}
		return nil, fmt.Errorf("open log %q: %w", path, err)
	}
	return &logReader{fl: fl, asm: newLogAssembler(timestamps)}, nil
}

func (r *logReader) Close() error { return r.fl.Close() }

// next reads at most max bytes of whole file lines and returns the log
// lines they complete, and how many bytes it read: 0 means nothing new.
func (r *logReader) next(max int) ([][]byte, int, error) {
	data, err := r.fl.Next(max)
	if err != nil {
		return nil, 0, err
	}
	n := len(data)
	var lines [][]byte
	for len(data) > 0 {
		raw := data
		i := bytes.IndexByte(data, '\n')
		if i >= 0 {
			raw, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if line, ok := r.parse(raw); ok {
			lines = append(lines, line)
		}
	}
	return lines, n, nil
}

func (r *logReader) parse(raw []byte) ([]byte, bool) {
	if len(raw) == 0 {
		return nil, false
	}
	e, err := parseCRILogLine(raw)
	if err != nil {
		r.skipped++
		return nil, false
	}
	return r.asm.add(e)
}

// finish returns what remains once the writer is known to be done: an
// unterminated last entry and unfinished partial lines.
func (r *logReader) finish() [][]byte {
	var lines [][]byte
	if rest := r.fl.Rest(); len(rest) > 0 {
		if line, ok := r.parse(rest); ok {
			lines = append(lines, line)
		}
	}
	return append(lines, r.asm.flush()...)
}
