//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// reapOrphanShims kills the runc shims of CRI's namespace, started by the
// suite's containerd (their -address), whose task bundle is gone from its
// task directory (ctrd.TaskDir: one directory per shim). Such a shim serves
// nothing containerd knows of: a shim still shutting down when a test
// stopped containerd (the runtime-restart scenario) survives the restart
// without its state and would stay behind on the machine for good. Shims of
// the other containerd flavor, which may run beside it, are not ours to
// judge. A shim's bundle exists before the shim starts,
// so a live one is never taken for an orphan.
func reapOrphanShims() (int, error) {
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // gone meanwhile
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if filepath.Base(args[0]) != "containerd-shim-runc-v2" {
			continue
		}
		id, ns := flagValue(args, "-id"), flagValue(args, "-namespace")
		if id == "" || ns != "k8s.io" || "unix://"+flagValue(args, "-address") != criEndpoint {
			continue
		}
		if _, err := os.Stat(filepath.Join(ctrd.TaskDir, id)); !os.IsNotExist(err) {
			continue
		}
		var pid int
		if _, err := fmt.Sscan(filepath.Base(filepath.Dir(p)), &pid); err != nil {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n, nil
}

// flagValue is the value after name in args, or "".
func flagValue(args []string, name string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == name {
			return args[i+1]
		}
	}
	return ""
}
