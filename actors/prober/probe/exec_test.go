package probe

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
)

// exitErr mimics cri.ExitError: a command that ran and exited non-zero.
type exitErr struct{ code int }

func (e *exitErr) Error() string { return "command exited" }
func (e *exitErr) ExitCode() int { return e.code }

// fakeExec is an Execer answering from a function.
type fakeExec struct {
	fn    func(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, error)
	calls []string
}

func (f *fakeExec) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	f.calls = append(f.calls, id+":"+strings.Join(cmd, " "))
	return f.fn(ctx, id, cmd, timeout)
}

func TestExec(t *testing.T) {
	cmd := &v1.ExecAction{Command: []string{"cat", "/tmp/healthy"}}
	tests := []struct {
		name        string
		action      *v1.ExecAction
		id          string
		fn          func(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, error)
		wantResult  messages.ProbeResult
		wantMessage string
		wantErr     string
	}{
		{
			name: "exit 0 is success with output",
			fn: func(context.Context, string, []string, time.Duration) ([]byte, []byte, error) {
				return []byte("ok\n"), nil, nil
			},
			wantResult: messages.ProbeSuccess, wantMessage: "ok\n",
		},
		{
			name: "non-zero exit is failure with output",
			fn: func(context.Context, string, []string, time.Duration) ([]byte, []byte, error) {
				return nil, []byte("cat: /tmp/healthy: No such file"), &exitErr{code: 1}
			},
			wantResult: messages.ProbeFailure, wantMessage: "cat: /tmp/healthy: No such file",
		},
		{
			name: "wrapped exit error without output names the code",
			fn: func(context.Context, string, []string, time.Duration) ([]byte, []byte, error) {
				return nil, nil, errorsJoin("exec sync", &exitErr{code: 7})
			},
			wantResult: messages.ProbeFailure, wantMessage: `command "cat /tmp/healthy" exited with 7`,
		},
		{
			name: "the cri client's wrapped ExitError is a failure",
			fn: func(context.Context, string, []string, time.Duration) ([]byte, []byte, error) {
				return []byte("not ready"), nil, fmt.Errorf("ExecSync %q: %w", "c1", &cri.ExitError{Code: 3, Stdout: []byte("not ready")})
			},
			wantResult: messages.ProbeFailure, wantMessage: "not ready",
		},
		{
			name: "runtime deadline status is a timeout failure",
			fn: func(context.Context, string, []string, time.Duration) ([]byte, []byte, error) {
				return nil, nil, status.Error(codes.DeadlineExceeded, "timeout 1s exceeded")
			},
			wantResult: messages.ProbeFailure, wantMessage: `command "cat /tmp/healthy" timed out`,
		},
		{
			name: "blocking command ends by the context deadline",
			fn: func(ctx context.Context, _ string, _ []string, _ time.Duration) ([]byte, []byte, error) {
				<-ctx.Done()
				return nil, nil, ctx.Err()
			},
			wantResult: messages.ProbeFailure, wantMessage: `command "cat /tmp/healthy" timed out`,
		},
		{
			name: "other runtime error is unknown",
			fn: func(context.Context, string, []string, time.Duration) ([]byte, []byte, error) {
				return nil, nil, status.Error(codes.NotFound, "no such container")
			},
			wantResult: messages.ProbeUnknown, wantErr: "no such container",
		},
		{name: "empty command", action: &v1.ExecAction{}, wantResult: messages.ProbeUnknown, wantErr: "exec.command: must not be empty"},
		{name: "no container ID", id: "-", wantResult: messages.ProbeUnknown, wantErr: "container ID is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			action, id := tt.action, tt.id
			if action == nil {
				action = cmd
			}
			switch id {
			case "":
				id = "c1"
			case "-":
				id = ""
			}
			f := &fakeExec{fn: tt.fn}
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			res, msg, err := Exec(ctx, f, id, action, 50*time.Millisecond)
			checkResult(t, res, msg, err, tt.wantResult, tt.wantMessage, tt.wantErr)
			if tt.fn != nil && (len(f.calls) != 1 || f.calls[0] != "c1:cat /tmp/healthy") {
				t.Errorf("ExecSync calls = %q, want one in c1", f.calls)
			}
		})
	}
}

func errorsJoin(what string, err error) error {
	return errors.Join(errors.New(what), err)
}

func TestExecTruncatesOutput(t *testing.T) {
	big := strings.Repeat("x", maxExecOutput+100)
	f := &fakeExec{fn: func(context.Context, string, []string, time.Duration) ([]byte, []byte, error) {
		return []byte(big), nil, &exitErr{code: 2}
	}}
	res, msg, err := Exec(context.Background(), f, "c1", &v1.ExecAction{Command: []string{"x"}}, time.Second)
	if err != nil || res != messages.ProbeFailure {
		t.Fatalf("Exec = %v, %v", res, err)
	}
	if len(msg) > maxExecOutput+len("...(truncated)") || !strings.HasSuffix(msg, "...(truncated)") {
		t.Errorf("message not truncated: len %d", len(msg))
	}
}

// checkResult compares a handler's outcome; wantMessage and wantErr match
// as substrings.
func checkResult(t *testing.T, res messages.ProbeResult, msg string, err error, wantRes messages.ProbeResult, wantMsg, wantErr string) {
	t.Helper()
	if res != wantRes {
		t.Errorf("result = %v, want %v (message %q, err %v)", res, wantRes, msg, err)
	}
	if !strings.Contains(msg, wantMsg) {
		t.Errorf("message = %q, want it to contain %q", msg, wantMsg)
	}
	switch {
	case wantErr == "" && err != nil:
		t.Errorf("unexpected error: %v", err)
	case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
		t.Errorf("error = %v, want it to contain %q", err, wantErr)
	}
}

func TestExecCombinedOutputBounded(t *testing.T) {
	huge := make([]byte, 8<<20)
	for _, tc := range []struct {
		stdout, stderr []byte
		wantPrefix     string
	}{
		{[]byte("out"), []byte("err"), "outerr"},
		{[]byte("out"), huge, "out\x00"},
		{huge, []byte("err"), "\x00\x00"},
	} {
		got := combinedOutput(tc.stdout, tc.stderr, maxExecOutput)
		if len(got) > maxExecOutput+len("...(truncated)") || !strings.HasPrefix(got, tc.wantPrefix) {
			t.Errorf("combinedOutput(%d, %d bytes) = %d bytes starting %q, want at most %d starting %q",
				len(tc.stdout), len(tc.stderr), len(got), got[:min(len(got), 8)], maxExecOutput, tc.wantPrefix)
		}
	}
}
