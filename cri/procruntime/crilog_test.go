package procruntime

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

func TestCRILogFormat(t *testing.T) {
	ts := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	long := strings.Repeat("x", maxLogLine+10)
	tests := []struct {
		name, stream, in string
		want             []string
	}{
		{"lines", streamStdout, "a\nb\n", []string{"stdout F a", "stdout F b"}},
		{"no trailing newline", streamStderr, "a\nrest", []string{"stderr F a", "stderr F rest"}},
		{"empty line", streamStdout, "\n", []string{"stdout F "}},
		{"long line is split", streamStdout, long + "\n", []string{
			"stdout P " + long[:maxLogLine], "stdout F " + long[maxLogLine:],
		}},
		{"nothing", streamStdout, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			l := newCRILog(&buf, func() time.Time { return ts })
			l.copyFrom(tt.stream, strings.NewReader(tt.in))
			var want string
			for _, w := range tt.want {
				want += "2024-05-06T07:08:09.123456789Z " + w + "\n"
			}
			if got := buf.String(); got != want {
				t.Errorf("log =\n%q\nwant\n%q", got, want)
			}
		})
	}
}

func TestCRILogStreamsDoNotInterleave(t *testing.T) {
	var buf bytes.Buffer
	l := newCRILog(&buf, time.Now)
	line := strings.Repeat("y", 1000) + "\n"
	done := make(chan struct{})
	for _, s := range []string{streamStdout, streamStderr} {
		go func() {
			l.copyFrom(s, strings.NewReader(strings.Repeat(line, 200)))
			done <- struct{}{}
		}()
	}
	<-done
	<-done
	for i, rec := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		f := strings.SplitN(rec, " ", 4)
		if len(f) != 4 || f[2] != tagFull || f[3] != line[:len(line)-1] {
			t.Fatalf("record %d is torn: %.80q", i, rec)
		}
	}
}

func TestProcIDGuardsAgainstPIDReuse(t *testing.T) {
	self, err := identify(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !self.alive() {
		t.Error("this process is not alive")
	}
	reused := procID{PID: self.PID, Start: self.Start + 1}
	if reused.alive() {
		t.Error("a different start time must not count as the same process")
	}
	if (procID{}).alive() {
		t.Error("PID 0 is not a process")
	}
}
