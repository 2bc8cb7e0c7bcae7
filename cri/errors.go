package cri

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The client wraps every error with the verb and the IDs involved
// (`StartContainer "abc": rpc error: ...`). grpc's status.FromError and
// status.Code look through such wrapping (errors.As on GRPCStatus), so the
// helpers below, and callers using status directly, still see the code.

// IsNotFound reports whether err says the sandbox, container or image does
// not exist.
func IsNotFound(err error) bool { return hasCode(err, codes.NotFound) }

// IsUnimplemented reports whether the runtime does not implement the verb
// (for example GetContainerEvents on containerd 1.6).
func IsUnimplemented(err error) bool { return hasCode(err, codes.Unimplemented) }

// IsUnavailable reports whether the runtime could not be reached: it is down
// or its socket does not accept connections.
func IsUnavailable(err error) bool { return hasCode(err, codes.Unavailable) }

// IsDeadlineExceeded reports whether the call ran out of time, either as a
// gRPC DeadlineExceeded status (also what runtimes answer for an ExecSync
// timeout) or a local context deadline.
func IsDeadlineExceeded(err error) bool {
	return hasCode(err, codes.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded)
}

func hasCode(err error, c codes.Code) bool {
	if err == nil {
		return false
	}
	s, ok := status.FromError(err)
	return ok && s.Code() == c
}

// ExitError is returned by ExecSync when the command ran and exited with a
// non-zero code. Its output is also returned by ExecSync itself.
type ExitError struct {
	Code   int32
	Stdout []byte
	Stderr []byte
}

// Error implements error.
func (e *ExitError) Error() string {
	return fmt.Sprintf("command exited with code %d", e.Code)
}

// ExitCode returns the command's exit code.
func (e *ExitError) ExitCode() int { return int(e.Code) }
