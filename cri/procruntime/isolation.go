package procruntime

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Isolation, optional and on only where it can work (root):
//
//   - Namespaces: each sandbox gets its own UTS, IPC, mount and PID
//     namespaces, held by a small holder process ("actorlet-sandbox <id>",
//     this binary re-executed, PID 1 of the sandbox's PID namespace, which
//     sets the pod's hostname, makes every mount private and mounts a /proc
//     of its own). Containers, and execs in them, enter the holder's
//     namespaces with nsenter(1). A container can therefore not rename the
//     host nor see processes outside its pod; it still sees the host's
//     filesystem (the mount namespace starts as a copy) and network. A pod
//     asking for the host's PID or IPC namespace (hostPID, hostIPC) keeps
//     it; a PID namespace per container (NamespaceMode CONTAINER, the
//     kubelet's default) is the pod's, shared by its containers. Stopping the sandbox kills the holder, and with it every process
//     left in the PID namespace.
//   - Cgroups: each container gets a cgroup (cgroup v1: memory, cpu,
//     cpuacct and pids under <mount>/<controller>/actorlet/<id>) that its
//     shim joins before starting it; memory and CPU limits of the config
//     and of UpdateContainerResources are written there, and stats read
//     from it.
//   - Filesystem (needs Namespaces): each container sees a filesystem view
//     of its own (rootfs.go): the host's root read-only, its mounts at
//     their container paths, a /dev, /proc and /tmp of the pod's.
//
// Without root, or with Options.Isolation.Namespaces / .Cgroups off, the
// runtime runs containers as plain host processes, as before; without
// Filesystem a container whose mounts would need a view is refused
// (checkMounts) unless Options.HostFilesystem asks for the old behaviour.

// Isolation selects the optional isolation of the process runtime.
type Isolation struct {
	// Namespaces: per-sandbox UTS, IPC, mount and PID namespaces. Needs
	// root and nsenter(1).
	Namespaces bool
	// Cgroups: a cgroup per container, for accounting and limits. Needs
	// root and writable cgroup v1 memory, cpu and cpuacct hierarchies.
	Cgroups bool
	// Filesystem: a filesystem view per container (rootfs.go). Needs
	// Namespaces.
	Filesystem bool
}

func (i Isolation) String() string {
	var parts []string
	if i.Namespaces {
		parts = append(parts, "namespaces")
	}
	if i.Cgroups {
		parts = append(parts, "cgroups")
	}
	if i.Filesystem {
		parts = append(parts, "filesystem")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}

// ParseIsolation reads "auto" (DefaultIsolation), "none", or a list of
// "namespaces", "cgroups" and "filesystem" (which needs "namespaces").
func ParseIsolation(s string) (Isolation, error) {
	switch s {
	case "auto", "":
		return DefaultIsolation(), nil
	case "none":
		return Isolation{}, nil
	}
	var iso Isolation
	for _, p := range strings.Split(s, ",") {
		switch strings.TrimSpace(p) {
		case "namespaces":
			iso.Namespaces = true
		case "cgroups":
			iso.Cgroups = true
		case "filesystem":
			iso.Filesystem = true
		default:
			return Isolation{}, fmt.Errorf("%q: want auto, none, or a list of namespaces, cgroups, filesystem", s)
		}
	}
	if iso.Filesystem && !iso.Namespaces {
		return Isolation{}, fmt.Errorf("%q: filesystem needs namespaces (the view is built in the pod's namespaces)", s)
	}
	return iso, nil
}

// DefaultIsolation is what this process can do: everything as root (where
// nsenter and the cgroup hierarchies are found), nothing otherwise.
func DefaultIsolation() Isolation {
	if os.Geteuid() != 0 {
		return Isolation{}
	}
	_, err := exec.LookPath("nsenter")
	_, cgErr := cgroupMounts()
	return Isolation{Namespaces: err == nil, Cgroups: cgErr == nil, Filesystem: err == nil}
}

// isolator carries the isolation in effect.
type isolator struct {
	mode    Isolation
	nsenter string
	cgroups map[string]string // controller → hierarchy mount
	self    string            // this binary, for shims started through nsenter
}

func newIsolator(mode Isolation) (*isolator, error) {
	iso := &isolator{}
	if mode.Namespaces {
		p, err := exec.LookPath("nsenter")
		if err != nil {
			return nil, fmt.Errorf("procruntime: isolation: namespaces: %w", err)
		}
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("procruntime: isolation: namespaces: find this binary: %w", err)
		}
		iso.nsenter, iso.self = p, self
		iso.mode.Namespaces = true
	}
	if mode.Cgroups {
		m, err := cgroupMounts()
		if err != nil {
			return nil, fmt.Errorf("procruntime: isolation: cgroups: %w", err)
		}
		iso.cgroups = m
		iso.mode.Cgroups = true
	}
	if mode.Filesystem {
		if !iso.mode.Namespaces {
			return nil, errors.New("procruntime: isolation: filesystem: needs namespaces")
		}
		if err := checkViewSupport(); err != nil {
			return nil, fmt.Errorf("procruntime: isolation: filesystem: %w", err)
		}
		iso.mode.Filesystem = true
	}
	return iso, nil
}

// checkViewSupport checks the kernel has what a filesystem view is built
// with: overlay, tmpfs and devpts file systems.
func checkViewSupport() error {
	b, err := os.ReadFile("/proc/filesystems")
	if err != nil {
		return err
	}
	for _, fs := range []string{"overlay", "tmpfs", "devpts"} {
		if !strings.Contains(string(b), "\t"+fs+"\n") {
			return fmt.Errorf("the kernel has no %s file system (/proc/filesystems)", fs)
		}
	}
	return nil
}
