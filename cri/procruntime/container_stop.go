package procruntime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/messages/seconds"
)

// pollInterval is how often an adopted shim (not our child) is checked.
const pollInterval = 100 * time.Millisecond

// waitShim waits for a shim this runtime started (its child) and records
// the container's exit.
func (r *Runtime) waitShim(c *container, cmd *exec.Cmd) {
	_ = cmd.Wait() // reaps the shim even after Stop
	r.shimExited(c)
}

// pollShim watches an adopted shim until it exits or the runtime stops.
func (r *Runtime) pollShim(c *container) {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for c.rec.Shim.alive() {
		select {
		case <-r.stopped:
			return
		case <-t.C:
		}
	}
	r.shimExited(c)
}

// shimExited loads the exit the shim recorded; a shim that died without
// recording one leaves exit code 255, reason Unknown (and its process, if
// it somehow survived, is killed).
func (r *Runtime) shimExited(c *container) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.isStopped() || r.destroyed || c.exit != nil {
		return
	}
	path := filepath.Join(r.containerDir(c.rec.ID), exitFile)
	var ex exitRecord
	if err := readJSON(path, &ex); err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			klog.ErrorS(err, "Failed to read container exit", "containerID", c.rec.ID)
		}
		_ = c.rec.Process.signalGroup(syscall.SIGKILL)
		ex = exitRecord{
			ExitCode:   exitCodeUnknown,
			FinishedAt: time.Now().UnixNano(),
			Reason:     reasonUnknown,
			Message:    "the container's shim exited without recording the exit status",
		}
		if _, ok := r.containers[c.rec.ID]; ok {
			if err := writeJSON(path, ex); err != nil {
				klog.ErrorS(err, "Failed to record lost container exit", "containerID", c.rec.ID)
			}
		}
	}
	c.exit = &ex
	close(c.done)
	if _, ok := r.containers[c.rec.ID]; ok {
		r.publishContainerLocked(c, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
	}
	klog.V(2).InfoS("Container exited", "containerID", c.rec.ID, "exitCode", ex.ExitCode, "reason", ex.Reason)
}

// StopContainer signals the container's process group with its stop signal
// (SIGTERM unless the config says otherwise), then SIGKILL after timeout
// seconds (0: at once), and returns once the exit is recorded. Stopping a
// container that is not running, or unknown, is fine (CRI: idempotent).
func (r *Runtime) StopContainer(ctx context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	if err := r.stopContainer(ctx, req.GetContainerId(), req.GetTimeout()); err != nil && status.Code(err) != codes.NotFound {
		return nil, err
	}
	return &runtimeapi.StopContainerResponse{}, nil
}

func (r *Runtime) stopContainer(ctx context.Context, id string, timeout int64) error {
	r.mu.Lock()
	c, err := lookup(r.containers, "container", id)
	if err != nil {
		r.mu.Unlock()
		return err
	}
	for c.starting {
		// Let the start settle first: stopping a container "CREATED" while
		// its shim is forking the process would leave that process behind.
		startDone := c.startDone
		r.mu.Unlock()
		select {
		case <-startDone:
		case <-ctx.Done():
			return status.FromContextError(fmt.Errorf("stop container %q: waiting for its start: %w", id, ctx.Err())).Err()
		}
		r.mu.Lock()
		if c, err = lookup(r.containers, "container", id); err != nil {
			r.mu.Unlock()
			return err
		}
	}
	if c.state() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		r.mu.Unlock()
		return nil
	}
	proc, done := c.rec.Process, c.done
	sig := stopSignal(c.config.GetStopSignal())
	r.mu.Unlock()

	if timeout > 0 {
		if err := proc.signalGroup(sig); err != nil {
			return status.Errorf(codes.Internal, "stop container %q: %v", c.rec.ID, err)
		}
		t := time.NewTimer(seconds.Duration(timeout))
		defer t.Stop()
		select {
		case <-done:
			return nil
		case <-t.C:
		case <-ctx.Done():
			return status.FromContextError(fmt.Errorf("stop container %q: %w", c.rec.ID, ctx.Err())).Err()
		}
	}
	if err := proc.signalGroup(syscall.SIGKILL); err != nil {
		return status.Errorf(codes.Internal, "kill container %q: %v", c.rec.ID, err)
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return status.FromContextError(fmt.Errorf("kill container %q: %w", c.rec.ID, ctx.Err())).Err()
	}
}

// stopSignal maps the config's stop signal to a signal (default SIGTERM).
func stopSignal(s runtimeapi.Signal) syscall.Signal {
	if s == runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT {
		return syscall.SIGTERM
	}
	// Enum names are "SIGNAL_SIGTERM" and so on.
	name := s.String()
	if len(name) > len("SIGNAL_") {
		if n := unix.SignalNum(name[len("SIGNAL_"):]); n != 0 {
			return n
		}
	}
	return syscall.SIGTERM
}

// RemoveContainer kills the container if it runs and removes its records.
// Removing an unknown container is fine.
func (r *Runtime) RemoveContainer(ctx context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	if err := r.removeContainer(ctx, req.GetContainerId()); err != nil {
		return nil, err
	}
	return &runtimeapi.RemoveContainerResponse{}, nil
}

func (r *Runtime) removeContainer(ctx context.Context, id string) error {
	if err := r.stopContainer(ctx, id, 0); err != nil {
		if status.Code(err) == codes.NotFound {
			return nil
		}
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := lookup(r.containers, "container", id)
	if status.Code(err) == codes.NotFound {
		return nil
	}
	if err != nil {
		return err
	}
	if c.state() == runtimeapi.ContainerState_CONTAINER_RUNNING {
		// Started between the stop and now.
		return status.Errorf(codes.FailedPrecondition, "remove container %q: it started while being removed", c.rec.ID)
	}
	if err := os.RemoveAll(r.containerDir(c.rec.ID)); err != nil {
		return status.Errorf(codes.Internal, "remove container %q: %v", c.rec.ID, err)
	}
	r.removeCgroups(c.rec.ID)
	r.cgroupParents.Delete(c.rec.ID)
	delete(r.containers, c.rec.ID)
	delete(r.names, c.key())
	r.publishContainerLocked(c, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT)
	return nil
}
