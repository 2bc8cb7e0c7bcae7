package commands

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/test/testutil"
)

func TestParseCRILogLine(t *testing.T) {
	tests := []struct {
		line    string
		want    logEntry
		wantErr bool
	}{
		{line: "2024-01-02T03:04:05.123456789Z stdout F hello world", want: logEntry{Stream: "stdout", Content: []byte("hello world")}},
		{line: "2024-01-02T03:04:05Z stderr P part", want: logEntry{Stream: "stderr", Partial: true, Content: []byte("part")}},
		{line: "2024-01-02T03:04:05Z stdout F", want: logEntry{Stream: "stdout"}},
		{line: "2024-01-02T03:04:05Z stdout F:x  two  spaces", want: logEntry{Stream: "stdout", Content: []byte(" two  spaces")}},
		{line: "not-a-time stdout F x", wantErr: true},
		{line: "2024-01-02T03:04:05Z stdin F x", wantErr: true},
		{line: "2024-01-02T03:04:05Z stdout X x", wantErr: true},
		{line: "garbage", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			got, err := parseCRILogLine([]byte(tt.line))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if got.Stream != tt.want.Stream || got.Partial != tt.want.Partial || !bytes.Equal(got.Content, tt.want.Content) || got.Timestamp.IsZero() {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func FuzzParseCRILogLine(f *testing.F) {
	f.Add([]byte("2024-01-02T03:04:05Z stdout F hello"))
	f.Add([]byte("2024-01-02T03:04:05Z stderr P "))
	// Hostile lines: no fields, a bad stream or tag, a huge timestamp,
	// binary.
	for _, s := range []string{"", " ", "x", "2024-01-02T03:04:05Z", "2024-01-02T03:04:05Z stdin F x", "2024-01-02T03:04:05Z stdout X x",
		"99999-99-99T99:99:99Z stdout F x", "2024-01-02T03:04:05.999999999999Z stdout F x", "\xff\x00 stdout F \x00", "2024-01-02T03:04:05Z stdout F\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := parseCRILogLine(line)
		if err == nil && e.Stream != "stdout" && e.Stream != "stderr" {
			t.Fatalf("accepted stream %q", e.Stream)
		}
	})
}

const sampleLog = `2024-01-02T03:04:01Z stdout F one
2024-01-02T03:04:02Z stdout P tw
2024-01-02T03:04:02.5Z stderr F err line
2024-01-02T03:04:03Z stdout F o
broken line is skipped
2024-01-02T03:04:04Z stdout F three
2024-01-02T03:04:05Z stdout F four
`

func TestLogs(t *testing.T) {
	nc := runNATS(t)
	dir := t.TempDir()
	fake := &fakeNode{logs: map[string]string{
		"default/web/app":          testutil.WriteFile(t, dir, "app/1.log", sampleLog),
		"default/web/app/previous": testutil.WriteFile(t, dir, "app/0.log", "2024-01-01T00:00:00Z stdout F old instance\n"),
		"default/web/":             filepath.Join(dir, "app/1.log"),
	}}
	fake.setPods(testPod("default", "web", "u1", "app"))
	startService(t, nc, fake, ServiceOptions{})
	c := &wire.Client{NC: nc, Timeout: 5 * time.Second}
	tail := func(n int64) *int64 { return &n }

	tests := []struct {
		name string
		req  wire.LogsRequest
		want string
	}{
		{"all, partial joined", wire.LogsRequest{Name: "web", Container: "app"}, "one\nerr line\ntwo\nthree\nfour\n"},
		{"default container", wire.LogsRequest{Name: "web"}, "one\nerr line\ntwo\nthree\nfour\n"},
		{"tail 2", wire.LogsRequest{Name: "web", Container: "app", TailLines: tail(2)}, "three\nfour\n"},
		{"tail 0", wire.LogsRequest{Name: "web", Container: "app", TailLines: tail(0)}, ""},
		{"tail more than lines", wire.LogsRequest{Name: "web", Container: "app", TailLines: tail(50)}, "one\nerr line\ntwo\nthree\nfour\n"},
		// tailLines counts the file's lines, as the kubelet's does: the
		// last 3 are the broken one (skipped), three and four.
		{"timestamps", wire.LogsRequest{Name: "web", Container: "app", TailLines: tail(3), Timestamps: true},
			"2024-01-02T03:04:04Z three\n2024-01-02T03:04:05Z four\n"},
		{"timestamps whole", wire.LogsRequest{Name: "web", Container: "app", Timestamps: true},
			"2024-01-02T03:04:01Z one\n2024-01-02T03:04:02.5Z err line\n2024-01-02T03:04:02Z two\n2024-01-02T03:04:04Z three\n2024-01-02T03:04:05Z four\n"},
		{"previous", wire.LogsRequest{Name: "web", Container: "app", Previous: true}, "old instance\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			if _, err := c.Logs(context.Background(), "n1", tt.req, &out); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Fatalf("log = %q, want %q", out.String(), tt.want)
			}
		})
	}
	t.Run("inline without inbox", func(t *testing.T) {
		var resp wire.LogsResponse
		if err := c.Call(context.Background(), "n1", wire.VerbLogs, time.Second, wire.LogsRequest{Name: "web", TailLines: tail(1)}, &resp); err != nil {
			t.Fatal(err)
		}
		if string(resp.Data) != "four\n" || resp.Truncated {
			t.Fatalf("inline = %+v", resp)
		}
	})
}

func appendLog(t *testing.T, path, content string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
}

// followedNode is a node with one pod, default/web, whose container app
// has logged one line ("first") to path.
func followedNode(t *testing.T) (path string, fake *fakeNode) {
	path = testutil.WriteFile(t, t.TempDir(), "app/0.log", "2024-01-02T03:04:01Z stdout F first\n")
	fake = &fakeNode{logs: map[string]string{"default/web/app": path, "default/web/": path}}
	fake.setPods(testPod("default", "web", "u1", "app"))
	return path, fake
}

func TestLogsFollowEndsWhenContainerExits(t *testing.T) {
	nc := runNATS(t)
	path, fake := followedNode(t)
	ended := make(chan string, 1)
	startService(t, nc, fake, ServiceOptions{FollowPoll: 20 * time.Millisecond, followEnded: func(r string) { ended <- r }})
	c := &wire.Client{NC: nc, Timeout: 5 * time.Second}

	out := &testutil.SyncBuffer{}
	done := make(chan string, 1)
	go func() {
		reason, err := c.Logs(context.Background(), "n1", wire.LogsRequest{Name: "web", Container: "app", Follow: true}, out)
		if err != nil {
			reason = "error: " + err.Error()
		}
		done <- reason
	}()
	testutil.Eventually(t, 5*time.Second, func() error { return want(out.String(), "first\n") })
	// A partial line is held until it is completed.
	appendLog(t, path, "2024-01-02T03:04:02Z stdout P sec\n")
	appendLog(t, path, "2024-01-02T03:04:03Z stdout F ond\n")
	testutil.Eventually(t, 5*time.Second, func() error { return want(out.String(), "first\nsecond\n") })

	// The container writes its last line and exits: the follow drains and ends.
	appendLog(t, path, "2024-01-02T03:04:04Z stdout F last\n")
	exited := testPod("default", "web", "u1", "app")
	exited.Status.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0}}
	fake.setPods(exited)
	wantEnded(t, done, wire.EndedExited, "follow", "after the container exited")
	if got := out.String(); got != "first\nsecond\nlast\n" {
		t.Fatalf("followed log = %q", got)
	}
	if r := <-ended; r != wire.EndedExited {
		t.Fatalf("service saw %q", r)
	}
}

func TestLogsFollowStopsWhenClientGoesAway(t *testing.T) {
	nc := runNATS(t)
	_, fake := followedNode(t)
	ended := make(chan string, 1)
	startService(t, nc, fake, ServiceOptions{
		FollowPoll:      20 * time.Millisecond,
		FollowKeepAlive: 100 * time.Millisecond,
		followEnded:     func(r string) { ended <- r },
	})
	c := &wire.Client{NC: nc, Timeout: 5 * time.Second}

	ctx, cancel := context.WithCancel(context.Background())
	out := &testutil.SyncBuffer{}
	done := make(chan string, 1)
	go func() {
		reason, _ := c.Logs(ctx, "n1", wire.LogsRequest{Name: "web", Container: "app", Follow: true}, out)
		done <- reason
	}()
	testutil.Eventually(t, 5*time.Second, func() error { return want(out.String(), "first\n") })
	cancel()
	if r := <-done; r != wire.EndedCanceled {
		t.Fatalf("client ended with %q", r)
	}
	// The container stays silent and running: the keep-alive finds the
	// client gone and the node's follow stops.
	wantEnded(t, ended, wire.EndedClientGone, "service follow", "after the client went away")
}

// wantEnded waits up to 5 s for the end reason of what on ch and fails t
// unless it is want; after says what should have ended it.
func wantEnded(t *testing.T, ch <-chan string, want, what, after string) {
	t.Helper()
	select {
	case r := <-ch:
		if r != want {
			t.Fatalf("%s ended with %q, want %q", what, r, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not end %s", what, after)
	}
}

func want(got, w string) error {
	if got != w {
		return &wire.Error{Code: 0, Description: "got " + strconvQuote(got) + ", want " + strconvQuote(w)}
	}
	return nil
}

func strconvQuote(s string) string { return "\"" + strings.ReplaceAll(s, "\n", `\n`) + "\"" }

// TestLogsTailOfABigRotatedLog: a tail of a 32 MB log reads its end only
// (the service used to read the whole file: +560 MB for a 335 MB log), and
// a tail longer than the current file goes on into the rotated files.
func TestLogsTailOfABigRotatedLog(t *testing.T) {
	nc := runNATS(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "app", "0.log")
	testutil.WriteFile(t, dir, "app/0.log.20260101-000001", "2024-01-02T03:04:00Z stdout F rotated-1\n2024-01-02T03:04:00Z stdout F rotated-2\n")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	line := "2024-01-02T03:04:01Z stdout F " + strings.Repeat("x", 1000) + "\n"
	block := strings.Repeat(line, 1024)
	for i := 0; i < 32; i++ {
		if _, err := f.WriteString(block); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.WriteString("2024-01-02T03:04:02Z stdout F last\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	fake := &fakeNode{logs: map[string]string{"default/web/app": path, "default/web/": path}}
	fake.setPods(testPod("default", "web", "u1", "app"))
	startService(t, nc, fake, ServiceOptions{})
	c := &wire.Client{NC: nc, Timeout: 10 * time.Second}
	tail := func(n int64) *int64 { return &n }

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var out strings.Builder
	if _, err := c.Logs(context.Background(), "n1", wire.LogsRequest{Name: "web", TailLines: tail(2)}, &out); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if !strings.HasSuffix(out.String(), "x\nlast\n") || strings.Count(out.String(), "\n") != 2 {
		t.Fatalf("tail 2 = %.80q..., want a line of x then last", out.String())
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("a tail of 2 lines of a 32 MB log allocated %d MB", alloc>>20)
	}

	// All of the current file and both rotated lines.
	var resp wire.LogsResponse
	if err := c.Call(context.Background(), "n1", wire.VerbLogs, 10*time.Second, wire.LogsRequest{Name: "web", TailLines: tail(32*1024 + 3)}, &resp); err != nil {
		t.Fatal(err)
	}
	if !resp.Truncated || len(resp.Data) != wire.MaxInlineLogBytes {
		t.Errorf("inline tail of 32 MB: %d bytes, truncated %v; want the last %d bytes", len(resp.Data), resp.Truncated, wire.MaxInlineLogBytes)
	}

	// Streamed to an inbox, across the rotated file (a small log).
	small := testutil.WriteFile(t, dir, "db/0.log", "2024-01-02T03:04:01Z stdout F current-1\n2024-01-02T03:04:02Z stdout F current-2\n")
	testutil.WriteFile(t, dir, "db/0.log.20260101-000001", "2024-01-02T03:04:00Z stdout F rotated-1\n2024-01-02T03:04:00Z stdout F rotated-2\n")
	fake.mu.Lock()
	fake.logs["default/web/db"] = small
	fake.mu.Unlock()
	out.Reset()
	if _, err := c.Logs(context.Background(), "n1", wire.LogsRequest{Name: "web", Container: "db", TailLines: tail(3)}, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "rotated-2\ncurrent-1\ncurrent-2\n" {
		t.Errorf("tail 3 across the rotated file = %q", out.String())
	}
}
