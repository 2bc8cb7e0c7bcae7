package procruntime

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"
	"time"
)

// criLog writes a container's output in the CRI log format the kubelet
// reads: "<RFC3339Nano> <stream> <F|P> <content>\n", one record per line;
// a line longer than the reader's buffer is split into P (partial) records
// ended by an F (full) one. Both streams share one writer; each record is a
// single Write, so records never interleave.
type criLog struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
	err error // first write error; later records are dropped
}

const (
	streamStdout = "stdout"
	streamStderr = "stderr"
	tagFull      = "F"
	tagPartial   = "P"
	// maxLogLine is the longest content of one record.
	maxLogLine = 16 * 1024
)

func newCRILog(w io.Writer, now func() time.Time) *criLog {
	return &criLog{w: w, now: now}
}

// copyFrom copies r into the log as the given stream until EOF or a read
// error.
func (l *criLog) copyFrom(stream string, r io.Reader) {
	br := bufio.NewReaderSize(r, maxLogLine)
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			l.record(stream, tagFull, bytes.TrimSuffix(line, []byte{'\n'}))
		case errors.Is(err, bufio.ErrBufferFull):
			l.record(stream, tagPartial, line)
		default: // EOF or a read error: flush what is left as a full line
			if len(line) > 0 {
				l.record(stream, tagFull, line)
			}
			return
		}
	}
}

// swap makes the log write to w from the next record on and returns the
// writer it replaces (for ReopenContainerLog: the old file was renamed away
// by log rotation). A previous write error is forgotten: the new file gets
// a fresh start.
func (l *criLog) swap(w io.Writer) io.Writer {
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.w
	l.w, l.err = w, nil
	return old
}

func (l *criLog) record(stream, tag string, content []byte) {
	var b bytes.Buffer
	b.Grow(len(content) + 64)
	b.WriteString(l.now().Format(time.RFC3339Nano))
	b.WriteByte(' ')
	b.WriteString(stream)
	b.WriteByte(' ')
	b.WriteString(tag)
	b.WriteByte(' ')
	b.Write(content)
	b.WriteByte('\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		_, l.err = l.w.Write(b.Bytes())
	}
}
