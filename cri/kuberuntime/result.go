package kuberuntime

import (
	"errors"
	"fmt"
	"time"
)

// Error kinds of a sync, named as the kubelet names them: each is also the
// waiting reason shown in the container's status. Results wrap them, so
// errors.Is(result.Error(), ErrCrashLoopBackOff) works.
var (
	ErrCrashLoopBackOff      = errors.New("CrashLoopBackOff")
	ErrImagePull             = errors.New("ErrImagePull")
	ErrImagePullBackOff      = errors.New("ImagePullBackOff")
	ErrImageNeverPull        = errors.New("ErrImageNeverPull")
	ErrInvalidImageName      = errors.New("InvalidImageName")
	ErrCreateContainerConfig = errors.New("CreateContainerConfigError")
	ErrCreateContainer       = errors.New("CreateContainerError")
	ErrRunContainer          = errors.New("RunContainerError")
	ErrPostStartHook         = errors.New("PostStartHookError")
	ErrKillContainer         = errors.New("KillContainerError")
	ErrCreatePodSandbox      = errors.New("CreatePodSandboxError")
	ErrConfigPodSandbox      = errors.New("ConfigPodSandboxError")
	ErrKillPodSandbox        = errors.New("KillPodSandboxError")
	ErrRuntimeStatus         = errors.New("RuntimeStatusError")
	// ErrForbidden: the node's policy refuses the container (a debug
	// container with Options.DenyEphemeralContainers).
	ErrForbidden              = errors.New("Forbidden")
	errPodInitFailed          = errors.New("init container failed and restartPolicy is Never")
	errSandboxCreationSkipped = errors.New("sandbox not created: pod must not restart")
)

// Action is one kind of step a sync takes.
type Action string

const (
	ActionCreatePodSandbox Action = "CreatePodSandbox"
	ActionKillPodSandbox   Action = "KillPodSandbox"
	ActionStartContainer   Action = "StartContainer"
	ActionKillContainer    Action = "KillContainer"
	ActionInitContainer    Action = "InitContainer"
)

// ActionResult is the outcome of one step on one target (a container name or
// a sandbox ID).
type ActionResult struct {
	Action Action
	Target string
	// Err is nil on success; it wraps one of the Err* kinds.
	Err error
	// Message is the human-readable detail (also in Err).
	Message string
}

// SyncResult is what one SyncPod pass did.
type SyncResult struct {
	Actions []ActionResult
	// SandboxCreated is set when this pass started a new sandbox.
	SandboxCreated bool
	// PodKilled is set when this pass killed the whole pod (a new sandbox
	// is needed, or nothing is left to run).
	PodKilled bool
}

func (r *SyncResult) add(a Action, target string, err error) {
	ar := ActionResult{Action: a, Target: target, Err: err}
	if err != nil {
		ar.Message = err.Error()
	}
	r.Actions = append(r.Actions, ar)
}

// Error returns nil if every action succeeded, else all failures joined.
// Waiting in a back-off is a failure of kind ErrCrashLoopBackOff or
// ErrImagePullBackOff, as in the kubelet.
func (r SyncResult) Error() error {
	var errs []error
	for _, a := range r.Actions {
		if a.Err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", a.Action, a.Target, a.Err))
		}
	}
	return errors.Join(errs...)
}

// kindError is an error of a kind with a message, for results and the
// reason cache: errors.Is matches the kind and the runtime error that caused
// it (so a gRPC code stays visible to status.Code callers up the chain).
type kindError struct {
	kind  error
	cause error
	msg   string
	// retryAt, set on back-off waits, is the instant the back-off ends: the
	// pod can be synced again exactly then instead of at the next resync.
	retryAt time.Time
}

// RetryAt is when the wait behind this error ends (zero: not a wait).
func (e *kindError) RetryAt() time.Time { return e.retryAt }

func (e *kindError) Error() string { return e.kind.Error() + ": " + e.msg }

func (e *kindError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.kind}
	}
	return []error{e.kind, e.cause}
}

func newKindError(kind error, format string, args ...any) error {
	return &kindError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// newBackOffError is a back-off wait of kind that ends at retryAt.
func newBackOffError(kind error, retryAt time.Time, format string, args ...any) error {
	return &kindError{kind: kind, msg: fmt.Sprintf(format, args...), retryAt: retryAt}
}

// wrapKind is a kind error caused by err: "<what>: <err>".
func wrapKind(kind, err error, format string, args ...any) error {
	msg := err.Error()
	if format != "" {
		msg = fmt.Sprintf(format, args...) + ": " + msg
	}
	return &kindError{kind: kind, cause: err, msg: msg}
}

// reasonOf returns the waiting reason and message of a start failure.
func reasonOf(err error) (string, string) {
	var ke *kindError
	if errors.As(err, &ke) {
		return ke.kind.Error(), ke.msg
	}
	return ErrRunContainer.Error(), err.Error()
}
