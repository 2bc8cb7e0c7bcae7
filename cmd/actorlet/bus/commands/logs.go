package commands

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

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

// logReader reads a CRI log file incrementally: every call to next returns
// the whole lines written since the previous call.
type logReader struct {
	f       *os.File
	rest    []byte // an incomplete last line, waiting for its newline
	asm     *logAssembler
	skipped int // malformed lines skipped
}

func openLogReader(path string, timestamps bool) (*logReader, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, wire.NotFound("log file %q", path)
		}
		return nil, fmt.Errorf("open log %q: %w", path, err)
	}
	return &logReader{f: f, asm: newLogAssembler(timestamps)}, nil
}

func (r *logReader) Close() error { return r.f.Close() }

// next reads to the current end of the file and returns complete lines.
func (r *logReader) next() ([][]byte, error) {
	var lines [][]byte
	chunk := make([]byte, 64*1024)
	for {
		n, err := r.f.Read(chunk)
		if n > 0 {
			data := append(r.rest, chunk[:n]...)
			for {
				i := bytes.IndexByte(data, '\n')
				if i < 0 {
					break
				}
				if line, ok := r.parse(data[:i]); ok {
					lines = append(lines, line)
				}
				data = data[i+1:]
			}
			r.rest = append([]byte(nil), data...)
		}
		if errors.Is(err, io.EOF) {
			return lines, nil
		}
		if err != nil {
			return lines, fmt.Errorf("read log %q: %w", r.f.Name(), err)
		}
	}
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
	if len(r.rest) > 0 {
		if line, ok := r.parse(r.rest); ok {
			lines = append(lines, line)
		}
		r.rest = nil
	}
	return append(lines, r.asm.flush()...)
}

// tailLines keeps the last n lines; n < 0 keeps all.
func tailLines(lines [][]byte, n int64) [][]byte {
	if n < 0 || int64(len(lines)) <= n {
		return lines
	}
	return lines[int64(len(lines))-n:]
}
