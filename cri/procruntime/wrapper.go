package procruntime

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Running commands beside a container: the exec wrapper (cgroups,
// terminal, user) and the shim's command line, through nsenter when the
// sandbox has namespaces (see isolation.go).

// wrapCommand returns the command line (path, argv) running path with
// argv args beside container id: in its cgroups and in its sandbox's
// namespaces when it has them, through this binary as a wrapper (see
// maybeExecWrapper). With tty the command gets a session of its own with
// the terminal as its controlling terminal inside the namespaces (a shell
// otherwise fails to hand the terminal back to nsenter's process group,
// which it cannot see).
func (r *Runtime) wrapCommand(id, sandboxID, dir, path string, args []string, tty bool, cred *credential) (string, []string, error) {
	r.mu.Lock()
	enter, err := r.enterArgsLocked(sandboxID, dir)
	r.mu.Unlock()
	if err != nil {
		return "", nil, err
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
		return path, args, nil // the caller sets cred on the process itself
	}
	self := ""
	if r.iso != nil {
		self = r.iso.self
	}
	if self == "" {
		if self, err = os.Executable(); err != nil {
			return "", nil, fmt.Errorf("find this binary: %w", err)
		}
	}
	ttyFlag := "0"
	if tty && enter != nil {
		ttyFlag = "1"
	}
	wrapped := append([]string{execWrapperArgv0, strings.Join(dirs, ":"), ttyFlag, cred.encode(), path}, args...)
	if enter == nil {
		return self, wrapped, nil
	}
	// nsenter runs self with argv [self, wrapped…]: the wrapper finds its
	// marker in argv[1].
	full := append(append(append([]string{}, enter...), self), wrapped...)
	return enter[0], full, nil
}

// execWrapperArgv0 makes this binary join cgroups, optionally take a
// session and terminal, and exec a command:
// argv = [execWrapperArgv0, "dir:dir:…", "0"|"1" (tty), "uid:gid:groups"
// or "", path, argv0, args…].
const execWrapperArgv0 = "actorlet-exec"

// maybeExecWrapper runs the exec wrapper if this process is one.
func maybeExecWrapper() {
	args := os.Args
	switch {
	case len(args) >= 6 && args[0] == execWrapperArgv0:
	case len(args) >= 7 && args[1] == execWrapperArgv0: // through nsenter
		args = args[1:]
	default:
		return
	}
	if args[1] != "" {
		if err := joinCgroups(strings.Split(args[1], ":")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(126)
		}
	}
	if args[2] == "1" {
		if _, err := unix.Setsid(); err == nil {
			_ = unix.IoctlSetInt(0, unix.TIOCSCTTY, 1)
		}
	}
	if err := becomeCredential(args[3]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(126)
	}
	err := syscall.Exec(args[4], args[5:], os.Environ())
	fmt.Fprintf(os.Stderr, "exec %s: %v\n", args[4], err)
	os.Exit(127)
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
