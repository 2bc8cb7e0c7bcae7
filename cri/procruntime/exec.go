package procruntime

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/messages/seconds"
)

// maxExecOutput caps each of ExecSync's stdout and stderr, leaving room
// in the 16 MiB response for both.
const maxExecOutput = 4 * 1024 * 1024

// ExecSync runs a command with the container's environment and working
// directory, in its own process group (killed whole on timeout), and
// returns its output and exit code. The container must be running.
func (r *Runtime) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	if len(req.GetCmd()) == 0 || req.GetCmd()[0] == "" {
		return nil, status.Error(codes.InvalidArgument, "cmd: must not be empty")
	}
	r.mu.Lock()
	c, err := lookup(r.containers, "container", req.GetContainerId())
	if err != nil {
		r.mu.Unlock()
		return nil, err
	}
	if st := c.state(); st != runtimeapi.ContainerState_CONTAINER_RUNNING {
		r.mu.Unlock()
		return nil, status.Errorf(codes.FailedPrecondition, "exec in container %q: container is %s, not RUNNING", c.rec.ID, st)
	}
	env := containerEnv(c.config, r.sandboxes[c.rec.SandboxID].config)
	dir := workingDir(c.config)
	r.mu.Unlock()

	if req.GetTimeout() > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, seconds.Duration(req.GetTimeout()))
		defer cancel()
	}
	path := req.Cmd[0]
	if !r.iso.mode.Filesystem { // in a view, the wrapper resolves it there
		if path, err = lookPathIn(req.Cmd[0], env); err != nil {
			return nil, status.Errorf(codes.Unknown, "exec %q in container %q: %v", req.Cmd, c.rec.ID, err)
		}
	}
	// In the sandbox's namespaces, when it has them (isolation.go).
	cred, err := containerCredential(c.config)
	if err != nil {
		return nil, err
	}
	w, err := r.wrapCommand(c.rec.ID, c.rec.SandboxID, dir, path, req.Cmd, false, cred)
	if err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "exec %q in container %q: %v", req.Cmd, c.rec.ID, err)
	}
	defer w.close()
	cmd := exec.CommandContext(ctx, w.Path)
	cmd.Args = w.Args
	cmd.Env = env
	cmd.ExtraFiles = w.Files
	if !w.Inside {
		cmd.Dir = dir
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if w.Path == path {
		cmd.SysProcAttr.Credential = cred.sys()
	}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second // a background child holding the pipes must not hang us
	stdout := &cappedBuffer{max: maxExecOutput}
	stderr := &cappedBuffer{max: maxExecOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr

	err = cmd.Run()
	if stdout.truncated || stderr.truncated {
		klog.V(2).InfoS("Exec output truncated to the limit", "container", c.rec.ID, "limitBytes", maxExecOutput,
			"stdoutTruncated", stdout.truncated, "stderrTruncated", stderr.truncated)
	}
	if ctx.Err() != nil && req.GetTimeout() > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, status.Errorf(codes.DeadlineExceeded, "exec %q in container %q: timed out after %ds", req.Cmd, c.rec.ID, req.GetTimeout())
	}
	if ctx.Err() != nil {
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	var exitErr *exec.ExitError
	resp := &runtimeapi.ExecSyncResponse{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		code, _ := exitStatus(exitErr.ProcessState, nil)
		resp.ExitCode = code
	default:
		return nil, status.Errorf(codes.Unknown, "exec %q in container %q: %v", req.Cmd, c.rec.ID, err)
	}
	return resp, nil
}

// cappedBuffer keeps the first max bytes written and discards the rest,
// draining the command's output as containerd does (the command is not
// killed by a closed pipe). The buffer is a named field, not embedded:
// an embedded bytes.Buffer would give cappedBuffer a ReadFrom method, and
// io.Copy (used by os/exec for a non-file Stdout) would call it and
// bypass the cap entirely.
type cappedBuffer struct {
	buf       bytes.Buffer
	max       int
	truncated bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	room := b.max - b.buf.Len()
	if len(p) > room {
		b.truncated = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	b.buf.Write(p)
	return len(p), nil
}

// Bytes returns what was kept.
func (b *cappedBuffer) Bytes() []byte { return b.buf.Bytes() }
