package probe

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/actorlet/actorlet/messages"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
)

// maxExecOutput bounds the command output kept in a probe message.
const maxExecOutput = 10 * 1024

// Execer runs a command in a container: cri.RuntimeService's ExecSync. A
// command that ran and exited non-zero returns its output and an error
// carrying the exit code (see exitCode).
type Execer interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout []byte, stderr []byte, err error)
}

// Exec runs an exec probe: exit 0 is Success, any other exit code Failure,
// a command that outlived timeout Failure "command ... timed out". The
// message is the combined output, truncated.
func Exec(ctx context.Context, e Execer, containerID string, action *v1.ExecAction, timeout time.Duration) (messages.ProbeResult, string, error) {
	if action == nil || len(action.Command) == 0 {
		return messages.ProbeUnknown, "", fmt.Errorf("exec.command: must not be empty")
	}
	if e == nil {
		return messages.ProbeUnknown, "", fmt.Errorf("exec probe: no runtime to exec in")
	}
	if containerID == "" {
		return messages.ProbeUnknown, "", fmt.Errorf("exec probe: container ID is empty")
	}
	stdout, stderr, err := e.ExecSync(ctx, containerID, action.Command, timeout)
	out := combinedOutput(stdout, stderr, maxExecOutput)
	if err == nil {
		return messages.ProbeSuccess, out, nil
	}
	if code, ok := exitCode(err); ok {
		if code == 0 {
			return messages.ProbeSuccess, out, nil
		}
		if out == "" {
			out = fmt.Sprintf("command %q exited with %d", strings.Join(action.Command, " "), code)
		}
		return messages.ProbeFailure, out, nil
	}
	if isTimeout(ctx, err) {
		return messages.ProbeFailure, fmt.Sprintf("command %q timed out", strings.Join(action.Command, " ")), nil
	}
	return messages.ProbeUnknown, "", fmt.Errorf("exec probe in container %q: %w", containerID, err)
}

// exitCode finds the exit code of a command that ran. The runtime client's
// exit error (cri.ExitError) and the kubelet-style exec errors are matched
// by their methods so this package does not depend on one concrete type.
func exitCode(err error) (int, bool) {
	var withExitCode interface{ ExitCode() int }
	if errors.As(err, &withExitCode) {
		return withExitCode.ExitCode(), true
	}
	var withExitStatus interface{ ExitStatus() int }
	if errors.As(err, &withExitStatus) {
		return withExitStatus.ExitStatus(), true
	}
	return 0, false
}

// isTimeout tells whether err means the exec ran out of time.
func isTimeout(ctx context.Context, err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return true
	}
	if s, ok := status.FromError(err); ok && s.Code() == codes.DeadlineExceeded {
		return true
	}
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// combinedOutput is stdout then stderr, at most n bytes of them (marked
// when cut), copied: the result never pins the runtime's buffers, which
// may hold megabytes of output, in a probe message kept for the pod.
func combinedOutput(stdout, stderr []byte, n int) string {
	if len(stdout)+len(stderr) <= n {
		return string(stdout) + string(stderr)
	}
	if len(stdout) >= n {
		return string(stdout[:n]) + "...(truncated)"
	}
	return string(stdout) + string(stderr[:n-len(stdout)]) + "...(truncated)"
}

// truncate cuts s to at most n bytes, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "...(truncated)"
}
