package wire

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// Error codes carried in micro error responses.
const (
	CodeBadRequest = 400
	// CodeForbidden: the node's own policy refuses the verb (exec or logs
	// turned off at the node), whatever the bus allowed.
	CodeForbidden = 403
	CodeNotFound  = 404
	// CodeTooLarge: the reply would not fit in one bus message.
	CodeTooLarge = 413
	// CodeBusy: the node has MaxConcurrentCommands requests in flight.
	CodeBusy     = 429
	CodeInternal = 500
	CodeTimeout  = 504
)

// ErrNotFound marks an unknown pod or container. Node implementations wrap
// it (fmt.Errorf("pod %q: %w", name, ErrNotFound)) so the service answers 404.
var ErrNotFound = errors.New("not found")

// Error is a command failure with its code. The service sends it as a micro
// error; the client returns it from every method.
type Error struct {
	Code        int
	Description string
}

func (e *Error) Error() string { return fmt.Sprintf("%s (%d)", e.Description, e.Code) }

// Forbidden is a 403 (CodeForbidden) naming what the node's policy refuses
// and the setting that refuses it, whatever the bus allowed.
func Forbidden(what, setting string) *Error {
	return &Error{Code: CodeForbidden, Description: ForbiddenMessage(what, setting)}
}

// ForbiddenMessage is Forbidden's description, also the message of a debug
// (ephemeral) container the node refuses: "forbidden: <what> is disabled
// on this node (<setting>)".
func ForbiddenMessage(what, setting string) string {
	return fmt.Sprintf("forbidden: %s is disabled on this node (%s)", what, setting)
}

// BadRequest is a 400 naming the offending field.
func BadRequest(field, reason string) *Error {
	return &Error{Code: CodeBadRequest, Description: fmt.Sprintf("bad request: %s: %s", field, reason)}
}

// NotFound is a 404 for what.
func NotFound(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, ErrNotFound)...)
}

// IsNotFound reports whether err is a 404 (service side or client side).
func IsNotFound(err error) bool { return errorCode(err) == CodeNotFound }

// ErrorCode returns the code err carries, as the service would send it.
func ErrorCode(err error) int { return errorCode(err) }

func errorCode(err error) int {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e.Code
	case errors.Is(err, ErrNotFound):
		return CodeNotFound
	case errors.Is(err, context.DeadlineExceeded):
		return CodeTimeout
	}
	return CodeInternal
}

// ToError turns any handler error into the Error sent on the wire.
func ToError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: errorCode(err), Description: err.Error()}
}

func parseCode(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return CodeInternal
	}
	return n
}
