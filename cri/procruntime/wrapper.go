package procruntime

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Running commands beside a container: the exec wrapper (cgroups,
// terminal, user) and the shim's command line, through nsenter when the
// sandbox has namespaces (see isolation.go).

// wrappedCmd is a command to run beside a container (wrapCommand).
type wrappedCmd struct {
	Path string
	Args []string
	// Files are the command's ExtraFiles (fd 3, …): this binary and the
	// container's cgroup.procs files, for a wrapper that runs inside the
	// container's namespaces where neither is reachable by path. The
	// caller closes them once the command started (close).
	Files []*os.File
	// Inside: the wrapper enters the working directory in the container's
	// view; the caller must not set the command's Dir (a host path).
	Inside bool
}

func (w *wrappedCmd) close() {
	for _, f := range w.Files {
		_ = f.Close()
	}
}

// wrapCommand returns the command running path (resolved on the host;
// inside a filesystem view args[0] is resolved there instead) with argv
// args beside container id: in its cgroups and in its sandbox's
// namespaces and its filesystem view when it has them, through this
// binary as a wrapper (see maybeExecWrapper). With tty the command gets a
// session of its own with the terminal as its controlling terminal inside
// the namespaces (a shell otherwise fails to hand the terminal back to
// nsenter's process group, which it cannot see).
func (r *Runtime) wrapCommand(id, sandboxID, dir, path string, args []string, tty bool, cred *credential) (*wrappedCmd, error) {
	r.mu.Lock()
	mountNS := ""
	if c, ok := r.containers[id]; ok && r.iso.mode.Filesystem && c.rec.Process.PID != 0 {
		if !c.rec.Process.alive() {
			r.mu.Unlock()
			return nil, fmt.Errorf("container %q: its process %d is gone", id, c.rec.Process.PID)
		}
		mountNS = fmt.Sprintf("/proc/%d/ns/mnt", c.rec.Process.PID)
	}
	enter, err := r.enterArgsLocked(sandboxID, mountNS)
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	var dirs []string
	if r.iso != nil && r.iso.mode.Cgroups {
		if _, err := os.Stat(r.cgroupFile("memory", id, "")); err == nil {
			for _, ctrl := range cgroupControllers {
				dirs = append(dirs, filepath.Dir(r.cgroupFile(ctrl, id, "x")))
			}
		}
	}
	if enter == nil && dirs == nil {
		return &wrappedCmd{Path: path, Args: args}, nil // the caller sets cred on the process itself
	}
	self := ""
	if r.iso != nil {
		self = r.iso.self
	}
	if self == "" {
		if self, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("find this binary: %w", err)
		}
	}
	ttyFlag := "0"
	if tty && enter != nil {
		ttyFlag = "1"
	}
	if enter == nil {
		wrapped := append([]string{execWrapperArgv0, "dirs=" + strings.Join(dirs, ":"), ttyFlag, cred.encode(), "", path}, args...)
		return &wrappedCmd{Path: self, Args: wrapped}, nil
	}
	// Inside: nsenter runs this binary from its descriptor (fd 3) with
	// argv ["/proc/self/fd/3", wrapped…]; the wrapper joins the cgroups
	// through descriptors opened here (fd 4, …).
	w := &wrappedCmd{Inside: true}
	f, err := os.Open(self)
	if err != nil {
		return nil, fmt.Errorf("open this binary: %w", err)
	}
	w.Files = append(w.Files, f)
	var fds []string
	for _, d := range dirs {
		f, err := os.OpenFile(filepath.Join(d, "cgroup.procs"), os.O_WRONLY, 0)
		if err != nil {
			w.close()
			return nil, fmt.Errorf("open cgroup %s: %w", d, err)
		}
		fds = append(fds, strconv.Itoa(3+len(w.Files)))
		w.Files = append(w.Files, f)
	}
	target := path
	if mountNS != "" {
		target = args[0]
	}
	wrapped := append([]string{"/proc/self/fd/3", execWrapperArgv0, "fds=" + strings.Join(fds, ","), ttyFlag, cred.encode(), dir, target}, args...)
	w.Path = enter[0]
	w.Args = append(append([]string{}, enter...), wrapped...)
	return w, nil
}

// execWrapperArgv0 makes this binary join cgroups, optionally take a
// session and terminal, enter a directory, and exec a command:
// argv = [execWrapperArgv0, "dirs=dir:dir:…" or "fds=4,5,…" (cgroups),
// "0"|"1" (tty), "uid:gid:groups" or "", working directory or "", path
// or name (resolved in $PATH), argv0, args…].
const execWrapperArgv0 = "actorlet-exec"

// maybeExecWrapper runs the exec wrapper if this process is one.
func maybeExecWrapper() {
	args := os.Args
	switch {
	case len(args) >= 7 && args[0] == execWrapperArgv0:
	case len(args) >= 8 && args[1] == execWrapperArgv0: // through nsenter, from fd 3
		syscall.CloseOnExec(3)
		args = args[1:]
	default:
		return
	}
	DefaultSignalsForChildren()
	fail := func(code int, err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(code)
	}
	switch cg := args[1]; {
	case strings.HasPrefix(cg, "dirs=") && cg != "dirs=":
		if err := joinCgroups(strings.Split(strings.TrimPrefix(cg, "dirs="), ":")); err != nil {
			fail(126, err)
		}
	case strings.HasPrefix(cg, "fds=") && cg != "fds=":
		for _, s := range strings.Split(strings.TrimPrefix(cg, "fds="), ",") {
			fd, err := strconv.Atoi(s)
			if err != nil {
				fail(126, fmt.Errorf("cgroup descriptor %q", s))
			}
			syscall.CloseOnExec(fd)
			if _, err := unix.Write(fd, []byte("0")); err != nil {
				fail(126, fmt.Errorf("join cgroup (fd %d): %w", fd, err))
			}
		}
	}
	if args[2] == "1" {
		if _, err := unix.Setsid(); err == nil {
			_ = unix.IoctlSetInt(0, unix.TIOCSCTTY, 1)
		}
	}
	if args[4] != "" {
		if err := os.Chdir(args[4]); err != nil {
			fail(126, fmt.Errorf("working directory: %w", err))
		}
	}
	path, err := lookPathIn(args[5], os.Environ())
	if err != nil {
		fail(127, err)
	}
	if err := becomeCredential(args[3]); err != nil {
		fail(126, err)
	}
	err = syscall.Exec(path, args[6:], os.Environ())
	fail(127, fmt.Errorf("exec %s: %v", path, err))
}

// shimCommand is the command starting container id's shim: this binary,
// directly or through nsenter into its sandbox's namespaces.
func (r *Runtime) shimCommand(id string) (*exec.Cmd, error) {
	r.mu.Lock()
	var enter []string
	var err error
	if c, ok := r.containers[id]; ok {
		enter, err = r.enterArgsLocked(c.rec.SandboxID, "")
	}
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if enter == nil {
		cmd := exec.Command("/proc/self/exe")
		cmd.Args = []string{shimArgv0, id}
		return cmd, nil
	}
	// nsenter cannot set argv[0]: the shim re-executes itself under its
	// name (reexecAsShim).
	cmd := exec.Command(enter[0], append(enter[1:], r.iso.self, id)...)
	return cmd, nil
}

// reexecAsShim gives a shim started through nsenter its name in ps.
func reexecAsShim() {
	if len(os.Args) == 2 && os.Args[0] != shimArgv0 {
		if self, err := os.Executable(); err == nil {
			_ = syscall.Exec(self, []string{shimArgv0, os.Args[1]}, os.Environ())
		}
	}
}
