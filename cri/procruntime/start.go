package procruntime

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// Exactly once across crashes. A start leaves durable traces in this order,
// and the runtime (the agent, for the embedded runtime) may be killed
// between any two of them:
//
//  1. record.json with "starting": true, fsync'd (the intent);
//  2. shim.lock created and flock'ed exclusively, then the shim forked
//     holding it (the lock passes to the shim, which holds it until it
//     exits: a lock test is a liveness test immune to PID reuse);
//  3. the shim starts the process and writes started.json (both
//     identities) before it reports to anyone;
//  4. record.json with the start time and identities ("starting" cleared);
//  5. at the end, exit.json by the shim.
//
// New resolves every record still "starting" (resolveStart), and never by
// starting it again:
//
//   - shim.lock held and started.json present: the process runs; adopt it
//     as RUNNING;
//   - shim.lock held, no started.json yet: the shim is starting it; wait,
//     at most the shim start timeout (1 min), then kill that shim (found by
//     its environment) and look again;
//   - shim.lock free (no shim alive) and exit.json present: EXITED as
//     recorded;
//   - shim.lock free, started.json present, no exit.json: the shim died;
//     kill what is left of the process (guarded by its start time) and
//     report EXITED 255 Unknown, as for any shim that died;
//   - shim.lock free, no started.json: no process ever ran (the runtime
//     died before the fork, or the shim failed before starting it); the
//     container is CREATED again and a later StartContainer runs it once.
//
// The one case this cannot see is a shim killed by someone else between
// forking the process and writing started.json (microseconds): that
// process is unknown to the runtime.

// shimStartTimeout bounds how long StartContainer waits for the shim's
// report, and resolveStart for a live shim to record its process: a shim
// that hangs that long is killed. Nanoseconds; tests shorten it.
var shimStartTimeout atomic.Int64

func init() { shimStartTimeout.Store(int64(time.Minute)) }

func shimTimeout() time.Duration { return time.Duration(shimStartTimeout.Load()) }

// resolveWait bounds how long New waits for the starts left by a previous
// runtime to resolve; past it they resolve in the background (reported
// CREATED, refusing StartContainer, until then).
const resolveWait = 10 * time.Second

// resolvePoll is how often resolveStart looks at a starting container.
const resolvePoll = 20 * time.Millisecond

// lockShim creates the container's shim.lock and takes its exclusive lock,
// to be handed to the shim. A lock already held means a shim of this
// container is alive.
func lockShim(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, shimLockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open shim lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errors.New("a shim of this container is still alive")
		}
		return nil, fmt.Errorf("lock shim lock: %w", err)
	}
	return f, nil
}

// shimAlive reports whether a shim holds the container's shim.lock.
func shimAlive(dir string) (bool, error) {
	f, err := os.OpenFile(filepath.Join(dir, shimLockFile), os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil // no shim was ever forked
	}
	if err != nil {
		return false, fmt.Errorf("open shim lock: %w", err)
	}
	defer f.Close()
	switch err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); {
	case err == nil:
		return false, nil // closing f releases it
	case errors.Is(err, syscall.EWOULDBLOCK):
		return true, nil
	default:
		return false, fmt.Errorf("test shim lock: %w", err)
	}
}

// killStarted kills the process the container's shim recorded in
// started.json, if it still runs, and the shim. For starts that failed
// half-way.
func killStarted(dir string) {
	var st startedRecord
	if err := readJSON(filepath.Join(dir, startedFile), &st); err != nil {
		return
	}
	_ = st.Process.signalGroup(syscall.SIGKILL)
	_ = st.Shim.signal(syscall.SIGKILL)
}

// resolveStart settles a container a previous runtime left "starting"
// (see above) and closes c.startDone. It gives up only when the runtime
// stops; the next runtime resolves it then.
func (r *Runtime) resolveStart(c *container) {
	dir := r.containerDir(c.rec.ID)
	t := time.NewTicker(resolvePoll)
	defer t.Stop()
	giveUp := time.Now().Add(shimTimeout())
	for {
		alive, err := shimAlive(dir)
		if err != nil {
			klog.ErrorS(err, "Failed to test a starting container's shim", "containerID", c.rec.ID)
		}
		var st startedRecord
		stErr := readJSON(filepath.Join(dir, startedFile), &st)
		if stErr != nil && !errors.Is(stErr, os.ErrNotExist) {
			klog.ErrorS(stErr, "Failed to read a starting container's process record", "containerID", c.rec.ID)
		}
		if stErr == nil {
			r.startedToHost(c.rec.SandboxID, &st) // the shim's view inside a pod's PID namespace
		}
		switch {
		case err != nil:
		case alive && stErr == nil:
			r.settleStart(c, &st, nil, true)
			return
		case !alive:
			var ex exitRecord
			switch exErr := readJSON(filepath.Join(dir, exitFile), &ex); {
			case exErr == nil:
				r.settleStart(c, startedOrNil(&st, stErr), &ex, false)
			case stErr == nil:
				r.settleStart(c, &st, nil, false)
			default:
				r.settleStart(c, nil, nil, false)
			}
			return
		}
		if alive && time.Now().After(giveUp) {
			// A shim that holds its lock this long without starting the
			// process is hung (as StartContainer would judge it): kill it;
			// the next look settles the container.
			klog.InfoS("Killing a shim that did not start its container in time", "containerID", c.rec.ID, "timeout", shimTimeout())
			killShimsOf(dir)
			giveUp = time.Now().Add(shimTimeout())
		}
		select {
		case <-r.stopped:
			return
		case <-t.C:
		}
	}
}

// killShimsOf kills the shims serving the container state directory dir,
// found by their environment (a shim's PID is only known once it wrote
// started.json).
func killShimsOf(dir string) {
	want := []byte(shimEnvVar + "=" + dir + "\x00")
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(append([]byte{0}, env...), append([]byte{0}, want...)) {
			continue
		}
		if id, err := identify(pid); err == nil {
			_ = id.signal(syscall.SIGKILL)
		}
	}
}

func startedOrNil(st *startedRecord, err error) *startedRecord {
	if err != nil {
		return nil
	}
	return st
}

// settleStart ends the resolution of a starting container: running (its
// shim alive, st known), exited (ex recorded, or st known and the shim
// dead), or CREATED again (neither: no process ever ran).
func (r *Runtime) settleStart(c *container, st *startedRecord, ex *exitRecord, running bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	dir := r.containerDir(c.rec.ID)
	_, present := r.containers[c.rec.ID]
	if running && (!present || r.destroyed) {
		// Removed (or destroyed) while being resolved: nothing may remain.
		_ = st.Process.signalGroup(syscall.SIGKILL)
		_ = st.Shim.signal(syscall.SIGKILL)
		running = false
	}
	c.rec.Starting = false
	if st != nil {
		c.rec.StartedAt, c.rec.Shim, c.rec.Process = st.StartedAt, st.Shim, st.Process
	}
	switch {
	case running:
		c.done = make(chan struct{})
		klog.InfoS("Adopting a container whose start the previous runtime did not record", "containerID", c.rec.ID, "shimPID", st.Shim.PID, "pid", st.Process.PID)
	case ex != nil:
		c.exit = ex
	case st != nil:
		_ = st.Process.signalGroup(syscall.SIGKILL)
		c.exit = &exitRecord{
			ExitCode:   exitCodeUnknown,
			FinishedAt: time.Now().UnixNano(),
			Reason:     reasonUnknown,
			Message:    "the container's shim exited without recording the exit status",
		}
		if present {
			if err := writeJSON(filepath.Join(dir, exitFile), c.exit); err != nil {
				klog.ErrorS(err, "Failed to record lost container exit", "containerID", c.rec.ID)
			}
		}
	default:
		klog.InfoS("A container's start was interrupted before its process ran; it is CREATED again", "containerID", c.rec.ID)
	}
	if present {
		if err := writeJSON(filepath.Join(dir, "record.json"), c.rec); err != nil {
			klog.ErrorS(err, "Failed to record a resolved start", "containerID", c.rec.ID)
		}
	}
	c.starting = false
	close(c.startDone)
	if running {
		go r.pollShim(c)
	}
	if present {
		t := runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT
		if !running {
			t = runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT
		}
		if c.exit != nil || running {
			r.publishContainerLocked(c, t)
		}
	}
}
