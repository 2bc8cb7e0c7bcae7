package procruntime

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const (
	// reopenTimeout bounds how long ReopenContainerLog waits for the shim
	// to have the new file open.
	reopenTimeout = 5 * time.Second
	reopenPoll    = 10 * time.Millisecond
)

// ReopenContainerLog asks the container's shim to reopen its log file, as
// containerd does: the kubelet's log rotation renames the file, calls this,
// and the shim creates a new file at the log path. It returns once the
// shim writes to a file at the log path (checked through /proc/<shim>/fd),
// so no output is lost between the rename and the reopen. The container
// must be running.
func (r *Runtime) ReopenContainerLog(ctx context.Context, req *runtimeapi.ReopenContainerLogRequest) (*runtimeapi.ReopenContainerLogResponse, error) {
	r.mu.Lock()
	c, err := lookup(r.containers, "container", req.GetContainerId())
	if err != nil {
		r.mu.Unlock()
		return nil, err
	}
	st, id, shim, logPath := c.state(), c.rec.ID, c.rec.Shim, c.rec.LogPath
	r.mu.Unlock()
	if st != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return nil, status.Errorf(codes.FailedPrecondition, "reopen log of container %q: container is %s, not RUNNING", id, st)
	}
	if logPath == "" {
		return &runtimeapi.ReopenContainerLogResponse{}, nil // nothing to reopen
	}
	if _, err := os.Stat(filepath.Join(r.containerDir(id), reopenMarkerFile)); err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "reopen log of container %q: its shim (pid %d) predates log reopening; the log is reopened when the container restarts", id, shim.PID)
	}
	if err := shim.signal(syscall.SIGUSR1); err != nil {
		return nil, status.Errorf(codes.Internal, "reopen log of container %q: %v", id, err)
	}
	ctx, cancel := context.WithTimeout(ctx, reopenTimeout)
	defer cancel()
	tick := time.NewTicker(reopenPoll)
	defer tick.Stop()
	for {
		if hasOpen(shim.PID, logPath) {
			return &runtimeapi.ReopenContainerLogResponse{}, nil
		}
		if !shim.alive() {
			return nil, status.Errorf(codes.FailedPrecondition, "reopen log of container %q: the container exited", id)
		}
		select {
		case <-ctx.Done():
			return nil, status.Errorf(codes.DeadlineExceeded, "reopen log of container %q: the shim did not reopen %s within %v", id, logPath, reopenTimeout)
		case <-tick.C:
		}
	}
}

// hasOpen reports whether process pid has the file now at path open: one
// of its descriptors names path and is the same file (a renamed-away file
// shows under its new name, a deleted one as "(deleted)").
func hasOpen(pid int, path string) bool {
	want, err := os.Stat(path)
	if err != nil {
		return false
	}
	// /proc shows the resolved path.
	if dir, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
		path = filepath.Join(dir, filepath.Base(path))
	}
	fdDir := "/proc/" + strconv.Itoa(pid) + "/fd"
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
		if err != nil || link != path {
			continue
		}
		if got, err := os.Stat(filepath.Join(fdDir, fd.Name())); err == nil && os.SameFile(got, want) {
			return true
		}
	}
	return false
}
