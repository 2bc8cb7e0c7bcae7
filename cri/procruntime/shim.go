package procruntime

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// The shim is this binary re-executed with shimEnvVar naming a container's
// state directory. It runs detached from the runtime (own session), so the
// container, its log copying and its exit record outlive the runtime.
//
// Protocol with the runtime (see start.go for why a crash at any instant
// never yields two processes):
//   - the runtime writes shim.json (shimSpec) and record.json marked
//     "starting" in the state directory, takes an exclusive flock on
//     shim.lock and starts the shim with a pipe as fd 3 and that locked file
//     as fd 4; the lock is the shim's from then on (the runtime closes its
//     copy), held for the shim's whole life: shim.lock locked ⇔ the shim is
//     alive, whatever happened to PIDs in between;
//   - the shim starts the process and, before telling anyone, writes
//     started.json (startedRecord: its own and the process' identity)
//     atomically; a shim that cannot write it kills the process and fails;
//   - it then writes one shimReport to fd 3 (the process identity, or why it
//     could not start) and closes it; if nobody reads it (the runtime died)
//     the process keeps running: started.json lets the next runtime adopt it;
//   - when the process exits the shim kills what is left of its process
//     group, drains the output into the log, writes exit.json (exitRecord)
//     and exits. A shim that exits without exit.json died abnormally.
const shimEnvVar = "ACTORLET_PROCRUNTIME_SHIM"

// shimArgv0 is the shim's argv[0], so that ps shows
// "actorlet-shim <container ID>".
const shimArgv0 = "actorlet-shim"

// shimSpec is what the shim runs.
type shimSpec struct {
	Args    []string `json:"args"`
	Env     []string `json:"env"`
	Dir     string   `json:"dir"`
	LogPath string   `json:"logPath"`
	// Stdio (attach.go): a pty, a stdin pipe, and where to serve attach.
	Tty          bool   `json:"tty,omitempty"`
	Stdin        bool   `json:"stdin,omitempty"`
	StdinOnce    bool   `json:"stdinOnce,omitempty"`
	AttachSocket string `json:"attachSocket,omitempty"`
	// Cgroups the container starts in (isolation.go).
	Cgroups []string `json:"cgroups,omitempty"`
	// Credential is the user it runs as (credential.go); nil: the shim's.
	Credential *credential `json:"credential,omitempty"`
	// View is the container's view.json (rootfs.go): it starts through an
	// init that builds its filesystem view. "": the host's filesystem.
	View string `json:"view,omitempty"`
	// Nsenter is nsenter(1), which puts the view's init in the runtime's
	// mount namespace (shimMountNSFD) before it makes its own.
	Nsenter string `json:"nsenter,omitempty"`
}

// startedRecord is started.json, written by the shim once the process runs.
type startedRecord struct {
	Shim      procID `json:"shim"`
	Process   procID `json:"process"`
	StartedAt int64  `json:"startedAt"`
}

// shimReport is the shim's answer on fd 3.
type shimReport struct {
	// Shim is set by the runtime (not sent): the shim's host identity when
	// it runs in a pod's PID namespace (isolation.go).
	Shim      procID `json:"-"`
	Process   procID `json:"process"`
	StartedAt int64  `json:"startedAt"`
	Error     string `json:"error,omitempty"`
}

// exitRecord is how a container ended (exit.json).
type exitRecord struct {
	ExitCode   int32  `json:"exitCode"`
	FinishedAt int64  `json:"finishedAt"`
	Reason     string `json:"reason"`
	Message    string `json:"message,omitempty"`
}

const (
	reasonCompleted  = "Completed"
	reasonError      = "Error"
	reasonStartError = "StartError"
	reasonUnknown    = "Unknown"
	reasonOOMKilled  = "OOMKilled"
	// exitCodeStartError is containerd's exit code for a failed start.
	exitCodeStartError = 128
	// exitCodeUnknown is containerd's exit code for an exit nobody saw.
	exitCodeUnknown = 255
	// drainTimeout bounds log copying after the process exited.
	drainTimeout = 2 * time.Second
)

const (
	shimSpecFile = "shim.json"
	exitFile     = "exit.json"
	shimLogFile  = "shim.log"
	startedFile  = "started.json"
	shimLockFile = "shim.lock"
	// reopenMarkerFile, written by a shim that reopens its log file on
	// SIGUSR1: the runtime only signals shims that can (SIGUSR1 would kill
	// any other).
	reopenMarkerFile = "reopens-log-on-sigusr1"
)

// The shim's inherited descriptors.
const (
	shimReportFD = 3
	shimLockFD   = 4
	// shimMountNSFD, with a filesystem view: the runtime's mount namespace.
	shimMountNSFD = 5
)

// MaybeRunShim must be the first call in main() and in TestMain of any
// package that starts this runtime. It returns at once, unless this
// process was started as a container shim: then it runs the shim and exits.
func MaybeRunShim() {
	maybeRunInit()
	maybeExecWrapper()
	if h, ok := os.LookupEnv(sandboxEnvVar); ok {
		runHolder(h) // never returns
	}
	dir := os.Getenv(shimEnvVar)
	if dir == "" {
		return
	}
	reexecAsShim()
	DefaultSignalsForChildren()
	if err := runShim(dir); err != nil {
		fmt.Fprintf(os.Stderr, "%s shim %s: %v\n", time.Now().Format(time.RFC3339Nano), dir, err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runShim(dir string) error {
	// Neither descriptor may leak into the container: the lock must end
	// with the shim, and the report pipe is the runtime's business.
	syscall.CloseOnExec(shimReportFD)
	syscall.CloseOnExec(shimLockFD)
	syscall.CloseOnExec(shimMountNSFD) // EBADF without a view: harmless
	report := os.NewFile(shimReportFD, "shim-report")
	if report == nil {
		return errors.New("no report pipe on fd 3")
	}
	if lock := os.NewFile(shimLockFD, "shim-lock"); lock == nil {
		return sendReport(report, shimReport{Error: "no lock file on fd 4"})
	}
	// The lock file stays open (and locked) until this process exits.
	var spec shimSpec
	if err := readJSON(filepath.Join(dir, shimSpecFile), &spec); err != nil {
		return sendReport(report, shimReport{Error: fmt.Sprintf("read shim spec: %v", err)})
	}
	reopen := make(chan os.Signal, 1)
	signal.Notify(reopen, syscall.SIGUSR1)
	cmd, _, out, cio, err := startProcess(spec) // out owns the log file
	if err != nil {
		return sendReport(report, shimReport{Error: err.Error()})
	}
	go reopenLogOnSignal(reopen, spec.LogPath, out.log)
	defer func() { _ = out.closeLog() }()
	if err := os.WriteFile(filepath.Join(dir, reopenMarkerFile), nil, 0o600); err != nil {
		fmt.Fprintf(os.Stderr, "%s shim %s: write reopen marker: %v\n", time.Now().Format(time.RFC3339Nano), dir, err)
	}
	startedAt := time.Now().UnixNano()
	id, err := identify(cmd.Process.Pid)
	if err == nil {
		var self procID
		if self, err = identify(os.Getpid()); err == nil {
			started := startedRecord{Shim: self, Process: id, StartedAt: startedAt}
			// Durable before anyone hears of the process: a runtime that
			// dies from here on finds the process through this record.
			if err = writeJSON(filepath.Join(dir, startedFile), started); err == nil {
				err = syncDir(dir)
			}
		}
	}
	if err != nil {
		// No record, no process: nobody could ever find it again (or the
		// container was removed while starting).
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		return sendReport(report, shimReport{Error: err.Error()})
	}
	if err := sendReport(report, shimReport{Process: id, StartedAt: startedAt}); err != nil {
		// The runtime that started us is gone; started.json lets the next
		// one adopt the container, so it keeps running.
		fmt.Fprintf(os.Stderr, "%s shim %s: %v (the container keeps running)\n", time.Now().Format(time.RFC3339Nano), dir, err)
	}

	waitErr := cmd.Wait()
	finished := time.Now()
	// As in a container, the main process' exit ends the whole group.
	_ = syscall.Kill(-id.PID, syscall.SIGKILL)
	out.wait(drainTimeout)
	cio.closeAll()
	signal.Stop(reopen)
	_ = out.syncLog()

	rec := exitRecord{FinishedAt: finished.UnixNano()}
	rec.ExitCode, rec.Reason = exitStatus(cmd.ProcessState, waitErr)
	if rec.ExitCode == 128+int32(syscall.SIGKILL) && oomKilled(spec.Cgroups) {
		rec.Reason = reasonOOMKilled
	}
	if rec.Reason == reasonUnknown {
		rec.Message = fmt.Sprintf("wait for process: %v", waitErr)
	}
	return writeJSON(filepath.Join(dir, exitFile), rec)
}

// exitStatus maps a process' end to the CRI exit code and reason.
func exitStatus(ps *os.ProcessState, waitErr error) (int32, string) {
	if ps == nil {
		return exitCodeUnknown, reasonUnknown
	}
	code := ps.ExitCode()
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	if code == 0 && waitErr == nil {
		return 0, reasonCompleted
	}
	return int32(code), reasonError
}

func sendReport(w *os.File, r shimReport) error {
	defer w.Close()
	if err := json.NewEncoder(w).Encode(r); err != nil {
		return fmt.Errorf("report to runtime: %w", err)
	}
	return nil
}

// outputCopier copies the process' stdout and stderr into the log.
type outputCopier struct {
	wg    sync.WaitGroup
	pipes []*os.File
	log   *criLog
}

// reopenLogOnSignal reopens the log file at path on every signal (the
// runtime's ReopenContainerLog, after the kubelet renamed the file for
// rotation) and closes the file it replaces. If the new file cannot be
// opened the log keeps its current one.
func reopenLogOnSignal(sigs <-chan os.Signal, path string, log *criLog) {
	for range sigs {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s reopen log %s: %v\n", time.Now().Format(time.RFC3339Nano), path, err)
			continue
		}
		if old, ok := log.swap(f).(*os.File); ok {
			_ = old.Close()
		}
	}
}

// syncLog flushes the log's current file to disk.
func (o *outputCopier) syncLog() error {
	o.log.mu.Lock()
	defer o.log.mu.Unlock()
	if f, ok := o.log.w.(*os.File); ok {
		return f.Sync()
	}
	return nil
}

// closeLog closes the log's current file.
func (o *outputCopier) closeLog() error {
	if f, ok := o.log.swap(io.Discard).(*os.File); ok {
		return f.Close()
	}
	return nil
}

// wait waits for both streams to reach EOF, at most d, then closes them.
func (o *outputCopier) wait(d time.Duration) {
	done := make(chan struct{})
	go func() { o.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
	for _, p := range o.pipes {
		_ = p.Close()
	}
	<-done
}

// maxInitError bounds what the shim reads of an init's failure.
const maxInitError = 64 * 1024

// startProcess starts the container's process in its own process group with
// its output copied into the CRI log file and its stdio attachable.
func startProcess(spec shimSpec) (*exec.Cmd, *os.File, *outputCopier, *containerIO, error) {
	if len(spec.Args) == 0 {
		return nil, nil, nil, nil, errors.New("no command to run")
	}
	if err := os.MkdirAll(filepath.Dir(spec.LogPath), 0o755); err != nil {
		return nil, nil, nil, nil, fmt.Errorf("create log directory: %w", err)
	}
	logFile, err := os.OpenFile(spec.LogPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("open log file: %w", err)
	}
	var cmd *exec.Cmd
	var syncR, syncW *os.File
	if spec.View == "" {
		path, err := lookPathIn(spec.Args[0], spec.Env)
		if err != nil {
			logFile.Close()
			return nil, nil, nil, nil, err
		}
		cmd = exec.Command(path, spec.Args[1:]...)
		cmd.Args[0] = spec.Args[0]
		cmd.Dir = spec.Dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: spec.Credential.sys()}
	} else {
		// The init (rootfs.go) builds the view in a mount namespace of its
		// own, then becomes the container's process; it reports a failure
		// on the pipe, which its exec closes.
		if syncR, syncW, err = os.Pipe(); err != nil {
			logFile.Close()
			return nil, nil, nil, nil, fmt.Errorf("create init pipe: %w", err)
		}
		defer syncR.Close()
		self, err := os.Open("/proc/self/exe")
		if err != nil {
			logFile.Close()
			return nil, nil, nil, nil, fmt.Errorf("open this binary: %w", err)
		}
		defer self.Close()
		// nsenter enters the runtime's mount namespace (so the view sees
		// the host's mounts as they are now, not as they were when the
		// sandbox started) and runs the init from its descriptor; the init
		// makes a mount namespace of its own first thing.
		cmd = exec.Command(spec.Nsenter, append([]string{spec.Nsenter, fmt.Sprintf("--mount=/proc/self/fd/%d", initMountNSFD), "--",
			fmt.Sprintf("/proc/self/fd/%d", initSelfFD), initArgv0, spec.View, spec.Credential.encode()}, spec.Args...)...)
		cmd.Args = cmd.Args[1:]
		cmd.ExtraFiles = []*os.File{syncW, os.NewFile(shimMountNSFD, "runtime-mount-ns"), self} // initSyncFD, initMountNSFD, initSelfFD
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	cmd.Env = spec.Env

	cio, err := newContainerIO(spec, cmd)
	if err != nil {
		logFile.Close()
		return nil, nil, nil, nil, err
	}
	if err := joinCgroups(spec.Cgroups); err != nil {
		logFile.Close()
		cio.closeChildEnds()
		cio.closeAll()
		return nil, nil, nil, nil, err
	}
	err = cmd.Start()
	leaveCgroups(spec.Cgroups)
	cio.closeChildEnds()
	if syncW != nil {
		syncW.Close()
	}
	if err == nil && syncR != nil {
		msg, _ := io.ReadAll(io.LimitReader(syncR, maxInitError))
		if len(msg) > 0 {
			_ = cmd.Wait()
			err = errors.New(string(msg))
		}
	}
	if err != nil {
		logFile.Close()
		cio.closeAll()
		return nil, nil, nil, nil, err
	}
	log := newCRILog(logFile, time.Now)
	o := cio.copyOutput(log)
	o.log = log
	return cmd, logFile, o, cio, nil
}
