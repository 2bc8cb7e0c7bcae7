package procruntime

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The filesystem view of a container (Isolation.Filesystem), built with
// the kernel's own mechanisms when the container starts, so a restarted
// container gets it again:
//
//   - the shim starts the container through an init (this binary, run by
//     nsenter(1) in the runtime's mount namespace, "actorlet-init"), which
//     first makes a mount namespace of its own (unshare(2) on a locked
//     thread, checked): a copy of the runtime's as it is when the container
//     starts, so a mount made on the host after the sandbox (a tmpfs under a
//     hostPath) is seen;
//   - the init makes every mount private, mounts a small tmpfs on the
//     container's state directory (<root>/containers/<id>/rootfs) and in
//     it an overlay whose lower layer is the host's root filesystem (so a
//     mount point the host does not have — /etc/config, /work-dir — is
//     created in the overlay's upper layer, never on the host), and binds
//     every other host mount (/sys, /boot, …) into it;
//   - it creates the mount points of the container's mounts and makes the
//     whole tree read-only, recursively (mount_setattr(2) with
//     AT_RECURSIVE and MOUNT_ATTR_RDONLY; every mount remounted read-only
//     where the kernel lacks it);
//   - it hides the runtime's and the agent's state directories (other
//     pods' volumes and secrets, credentials) under empty read-only tmpfs;
//   - it mounts, in path order: a /proc of the pod's PID namespace; a tmpfs
//     /dev with the host's null, zero, full, random, urandom and tty bound
//     in, a devpts instance of its own at /dev/pts and the pod's /dev/shm (a
//     directory of the sandbox); the pod's private /tmp
//     (<root>/sandboxes/<id>/tmp, shared by its containers); its DNS
//     config at /etc/resolv.conf; and every CRI
//     mount at its container_path (bind, read-only when asked, rslave for
//     HostToContainer), the targets resolved inside the view
//     (openat2(2) RESOLVE_IN_ROOT), so a symlink planted in a volume never
//     leads a mount outside it;
//   - it pivots into the view (pivot_root(2)), detaches the host's tree,
//     enters the working directory, resolves the command in the view's
//     PATH, takes the container's user and execs the command. Any failure
//     before the exec is reported to the shim on a pipe (fd 3, closed on
//     exec): the container fails to start (StartError) instead of running.
//
// Every mount lives in the container's mount namespace and goes with its
// last process. Execs enter that namespace (wrapper.go).

// initArgv0 makes this binary a container init:
// argv = [initArgv0, view.json path, "uid:gid:groups" or "", argv…].
const initArgv0 = "actorlet-init"

// The init's descriptors: its pipe to the shim, the runtime's mount
// namespace (nsenter's), this binary (nsenter runs it from there).
const (
	initSyncFD    = 3
	initMountNSFD = 4
	initSelfFD    = 5
)

const (
	viewFile    = "view.json"
	viewBaseDir = "rootfs"
	podTmpDir   = "tmp"
	podShmDir   = "shm"
)

// Limits of a container config's mounts.
const (
	maxMounts    = 256
	maxMountPath = 4096
)

// viewSpec is view.json: what the init builds.
type viewSpec struct {
	// Base is an empty host directory the view is built in.
	Base   string      `json:"base"`
	Mounts []viewMount `json:"mounts"`
	// Hide: host directories covered by an empty read-only tmpfs.
	Hide []string `json:"hide,omitempty"`
	// Dir is the working directory inside.
	Dir string `json:"dir"`
}

// viewMount is one mount of the view.
type viewMount struct {
	// Source is the host path of a bind mount.
	Source string `json:"source,omitempty"`
	Target string `json:"target"`
	// Type is "" for a bind mount, else the file system type.
	Type     string  `json:"type,omitempty"`
	Data     string  `json:"data,omitempty"`
	Flags    uintptr `json:"flags,omitempty"`
	Readonly bool    `json:"readonly,omitempty"`
	// RecursiveReadonly: the mounts below the source read-only too (CRI
	// recursive_read_only); Readonly alone leaves them as they are.
	RecursiveReadonly bool `json:"recursiveReadonly,omitempty"`
	// Slave: rslave (HostToContainer) instead of private.
	Slave bool `json:"slave,omitempty"`
}

// devices are the host's device nodes a container's /dev gets.
var devices = []string{"null", "zero", "full", "random", "urandom", "tty"}

// checkMounts refuses container mounts the view cannot give.
func checkMounts(mounts []*runtimeapi.Mount, view bool) error {
	if len(mounts) > maxMounts {
		return fmt.Errorf("config.mounts: %d mounts, limit is %d", len(mounts), maxMounts)
	}
	for i, m := range mounts {
		field := fmt.Sprintf("config.mounts[%d]", i)
		cp, hp := m.GetContainerPath(), m.GetHostPath()
		switch {
		case len(cp) > maxMountPath || len(hp) > maxMountPath:
			return fmt.Errorf("%s: a path is longer than %d bytes", field, maxMountPath)
		case !filepath.IsAbs(cp):
			return fmt.Errorf("%s.container_path %q: must be absolute", field, cp)
		case !filepath.IsAbs(hp):
			return fmt.Errorf("%s.host_path %q: must be absolute", field, hp)
		case strings.ContainsRune(cp, 0) || strings.ContainsRune(hp, 0):
			return fmt.Errorf("%s: a path contains a NUL byte", field)
		}
		if !view {
			continue
		}
		switch c := filepath.Clean(cp); {
		case c == "/" || c == "/proc":
			return fmt.Errorf("%s.container_path %q: the view keeps its own %s", field, cp, c)
		case m.GetRecursiveReadOnly() && (!m.GetReadonly() || m.GetPropagation() != runtimeapi.MountPropagation_PROPAGATION_PRIVATE):
			return fmt.Errorf("%s.recursive_read_only: needs readonly and Private propagation", field)
		case m.GetPropagation() == runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL:
			return fmt.Errorf("%s.propagation: Bidirectional needs the host's mount namespace; the process runtime gives each container a view of its own (Private and HostToContainer are supported)", field)
		}
		if _, err := os.Stat(hp); err != nil {
			return fmt.Errorf("%s.host_path: %v", field, err)
		}
	}
	return nil
}

// annotationTerminationMessagePath is the kubelet's annotation naming a
// container's termination message path (its mount is the one a runtime
// without views can leave out).
const annotationTerminationMessagePath = "io.kubernetes.container.terminationMessagePath"

// checkContainerMounts checks config's mounts against what this runtime
// gives: a view, the host's filesystem by choice (HostFilesystem), or a
// refusal of any mount that would need a view.
func (r *Runtime) checkContainerMounts(config *runtimeapi.ContainerConfig) error {
	view := r.iso.mode.Filesystem
	if err := checkMounts(config.GetMounts(), view); err != nil {
		return err
	}
	if view || r.opts.HostFilesystem {
		return nil
	}
	for i, m := range config.GetMounts() {
		cp := filepath.Clean(m.GetContainerPath())
		if cp == filepath.Clean(m.GetHostPath()) || cp == config.GetAnnotations()[annotationTerminationMessagePath] {
			continue
		}
		return fmt.Errorf("config.mounts[%d]: %q cannot appear at %q: this process runtime runs without filesystem views (they need root: --isolation=auto as root), so the container would see the host's %s instead; run the runtime as root, or with --host-filesystem to accept that", i, m.GetHostPath(), cp, cp)
	}
	return nil
}

// writeView writes c's view.json and prepares the host directories it
// needs; it returns its path.
func (r *Runtime) writeView(c *container, s *sandbox) (string, error) {
	spec := r.containerView(c, s)
	if err := os.MkdirAll(spec.Base, 0o700); err != nil {
		return "", fmt.Errorf("create the view's directory: %w", err)
	}
	path := filepath.Join(r.containerDir(c.rec.ID), viewFile)
	if err := writeJSON(path, spec); err != nil {
		return "", err
	}
	return path, nil
}

// containerView is the view of container c in sandbox s: the pod's
// mounts, then c's own, parents before children.
func (r *Runtime) containerView(c *container, s *sandbox) *viewSpec {
	sb := r.sandboxDir(s.rec.ID)
	nosuid := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
	system := []viewMount{
		{Target: "/proc", Type: "proc", Flags: nosuid | unix.MS_NOEXEC},
		{Target: "/dev", Type: "tmpfs", Data: "mode=755,size=65536k", Flags: unix.MS_NOSUID | unix.MS_STRICTATIME},
		{Target: "/dev/pts", Type: "devpts", Data: "newinstance,ptmxmode=0666,mode=0620", Flags: unix.MS_NOSUID | unix.MS_NOEXEC},
		{Target: "/dev/shm", Source: filepath.Join(sb, podShmDir)},
		{Target: "/tmp", Source: filepath.Join(sb, podTmpDir)},
	}
	for _, d := range devices {
		system = append(system, viewMount{Target: "/dev/" + d, Source: "/dev/" + d})
	}
	if resolv := filepath.Join(sb, "resolv.conf"); s.config.GetDnsConfig() != nil {
		system = append(system, viewMount{Target: "/etc/resolv.conf", Source: resolv, Readonly: true})
	}
	user := map[string]bool{}
	var own []viewMount
	for _, m := range c.config.GetMounts() {
		t := filepath.Clean(m.GetContainerPath())
		user[t] = true
		own = append(own, viewMount{
			Source:            m.GetHostPath(),
			Target:            t,
			Readonly:          m.GetReadonly(),
			RecursiveReadonly: m.GetRecursiveReadOnly(),
			Slave:             m.GetPropagation() == runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER,
		})
	}
	var all []viewMount
	for _, m := range system {
		if !user[m.Target] { // a volume at the same path wins
			all = append(all, m)
		}
	}
	all = append(all, own...)
	sort.SliceStable(all, func(i, j int) bool { return depth(all[i].Target) < depth(all[j].Target) })
	hide := []string{r.opts.RootDir}
	hide = append(hide, r.opts.HidePaths...)
	return &viewSpec{
		Base:   filepath.Join(r.containerDir(c.rec.ID), viewBaseDir),
		Mounts: all,
		Hide:   hide,
		Dir:    workingDir(c.config),
	}
}

func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// under reports whether p is dir or below it.
func under(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// maybeRunInit runs the container init if this process is one (started
// by nsenter from its descriptor: argv[1] is initArgv0).
func maybeRunInit() {
	if len(os.Args) < 5 || os.Args[1] != initArgv0 {
		return
	}
	for _, fd := range []int{initSyncFD, initMountNSFD, initSelfFD} {
		syscall.CloseOnExec(fd)
	}
	sync := os.NewFile(initSyncFD, "init-sync")
	// Every mount of the view is made by this thread, in a mount namespace
	// it makes its own, and the command is exec'd from it.
	runtime.LockOSThread()
	err := ownMountNamespace()
	if err == nil {
		err = runInit(os.Args[2], os.Args[3], os.Args[4:])
	}
	// Only a failure returns.
	if sync != nil {
		_, _ = sync.WriteString(err.Error())
	}
	os.Exit(exitCodeStartError)
}

// ownMountNamespace moves the calling thread into a new mount namespace (a
// copy of the runtime's, where nsenter put it) and checks it did: nothing
// may ever be mounted in the runtime's.
func ownMountNamespace() error {
	before, err := os.Readlink("/proc/thread-self/ns/mnt")
	if err != nil {
		return fmt.Errorf("read the mount namespace: %w", err)
	}
	if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_FS); err != nil {
		return fmt.Errorf("make a mount namespace (unshare): %w", err)
	}
	after, err := os.Readlink("/proc/thread-self/ns/mnt")
	if err != nil || after == before {
		return fmt.Errorf("no mount namespace of its own (%s, %v)", after, err)
	}
	return nil
}

// runInit builds the view, enters it and execs argv; it returns only on
// failure.
func runInit(specPath, cred string, argv []string) error {
	var spec viewSpec
	if err := readJSON(specPath, &spec); err != nil {
		return fmt.Errorf("read the container's filesystem view: %w", err)
	}
	root, err := buildView(&spec)
	if err != nil {
		return fmt.Errorf("filesystem view: %w", err)
	}
	if err := enterView(root); err != nil {
		return fmt.Errorf("filesystem view: %w", err)
	}
	if err := os.Chdir(spec.Dir); err != nil {
		return fmt.Errorf("working_dir %q: %w", spec.Dir, err)
	}
	path, err := lookPathIn(argv[0], os.Environ())
	if err != nil {
		return err
	}
	if err := becomeCredential(cred); err != nil {
		return err
	}
	err = syscall.Exec(path, argv, os.Environ())
	return fmt.Errorf("exec %s: %w", path, err)
}

// hostMount is a line of /proc/self/mountinfo.
type hostMount struct {
	id, parent int
	point      string
	opts       string
}

func readMountinfo() ([]hostMount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []hostMount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 6 {
			continue
		}
		id, _ := strconv.Atoi(fs[0])
		parent, _ := strconv.Atoi(fs[1])
		out = append(out, hostMount{id: id, parent: parent, point: unescapeMountinfo(fs[4]), opts: fs[5]})
	}
	return out, sc.Err()
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// buildView builds spec's view under spec.Base and returns its root.
func buildView(spec *viewSpec) (string, error) {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return "", fmt.Errorf("make mounts private: %w", err)
	}
	mounts, err := readMountinfo()
	if err != nil {
		return "", fmt.Errorf("read mountinfo: %w", err)
	}
	rootID := -1
	for _, m := range mounts {
		if m.point == "/" {
			rootID = m.id // the last one is on top
		}
	}
	base := spec.Base
	if err := unix.Mount("tmpfs", base, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=700,size=4m"); err != nil {
		return "", fmt.Errorf("mount a tmpfs on %s: %w", base, err)
	}
	for _, d := range []string{"upper", "work", "root"} {
		if err := os.Mkdir(filepath.Join(base, d), 0o755); err != nil {
			return "", err
		}
	}
	root := filepath.Join(base, "root")
	opts := fmt.Sprintf("lowerdir=/,upperdir=%s,workdir=%s", filepath.Join(base, "upper"), filepath.Join(base, "work"))
	if err := unix.Mount("overlay", root, "overlay", 0, opts); err != nil {
		return "", fmt.Errorf("mount the host's root filesystem read-only (overlay %s): %w", opts, err)
	}
	// The host's other mounts, each with what is mounted below it.
	planned := func(p string) bool {
		for _, m := range spec.Mounts {
			if under(p, m.Target) {
				return true
			}
		}
		return under(p, base)
	}
	seen := map[string]bool{}
	for _, m := range mounts {
		if m.parent != rootID || m.id == rootID || m.point == "/" || seen[m.point] || planned(m.point) {
			continue
		}
		seen[m.point] = true
		if err := unix.Mount(m.point, filepath.Join(root, m.point), "", unix.MS_BIND|unix.MS_REC, ""); errors.Is(err, unix.ENOENT) {
			// Unmounted and removed since mountinfo was read (a container
			// of another runtime on the host going away): nothing to show.
			continue
		} else if err != nil {
			return "", fmt.Errorf("bind the host's %s: %w", m.point, err)
		}
	}
	rootFD, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(rootFD)
	var rootStat unix.Stat_t
	if err := unix.Fstat(rootFD, &rootStat); err != nil {
		return "", err
	}
	// Mount points on the host's tree: created in the overlay's upper
	// layer, before it turns read-only.
	for i, m := range spec.Mounts {
		covered := false
		for _, p := range spec.Mounts[:i] {
			if under(m.Target, p.Target) {
				covered = true
			}
		}
		if covered {
			continue
		}
		fd, err := openInRoot(rootFD, m.Target, mountpointKind(m), rootStat.Dev)
		if err != nil {
			return "", fmt.Errorf("mount point %s: %w", m.Target, err)
		}
		unix.Close(fd)
	}
	if err := readOnlyTree(root); err != nil {
		return "", err
	}
	for _, h := range spec.Hide {
		if fi, err := os.Lstat(filepath.Join(root, h)); err != nil || !fi.IsDir() {
			continue
		}
		if err := unix.Mount("tmpfs", filepath.Join(root, h), "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=755,size=4k"); err != nil {
			return "", fmt.Errorf("hide %s: %w", h, err)
		}
	}
	for _, m := range spec.Mounts {
		if err := mountInView(rootFD, m); err != nil {
			return "", fmt.Errorf("mount %s: %w", m.Target, err)
		}
	}
	return root, nil
}

// mountpointKind is what m's mount point must be: a directory, or a file
// for a file bound onto it.
func mountpointKind(m viewMount) int {
	if m.Type != "" {
		return createDir
	}
	if fi, err := os.Stat(m.Source); err == nil && !fi.IsDir() {
		return createFile
	}
	return createDir
}

const (
	createNone = iota
	createDir
	createFile
)

// openInRoot opens path inside the tree at rootFD (symlinks resolved as if
// rootFD were /), creating what is missing as kind says; created entries
// must be on device dev when dev is not 0 (the view's own layer, never a
// host file system).
func openInRoot(rootFD int, path string, kind int, dev uint64) (int, error) {
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}
	rel := strings.TrimPrefix(filepath.Clean(path), "/")
	if rel == "" {
		rel = "."
	}
	fd, err := unix.Openat2(rootFD, rel, how)
	if err == nil || !errors.Is(err, unix.ENOENT) || kind == createNone {
		return fd, err
	}
	parts := strings.Split(rel, "/")
	cur := "."
	for i, name := range parts {
		next := filepath.Join(cur, name)
		if fd, err := unix.Openat2(rootFD, next, how); err == nil {
			if i == len(parts)-1 {
				return fd, nil
			}
			unix.Close(fd)
			cur = next
			continue
		} else if !errors.Is(err, unix.ENOENT) {
			return -1, err
		}
		pfd, err := unix.Openat2(rootFD, cur, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: how.Resolve})
		if err != nil {
			return -1, err
		}
		var st unix.Stat_t
		if err := unix.Fstat(pfd, &st); err != nil {
			unix.Close(pfd)
			return -1, err
		}
		if dev != 0 && st.Dev != dev {
			unix.Close(pfd)
			return -1, fmt.Errorf("%s does not exist and would have to be created on a host file system (/%s), which the pod sees read-only", path, cur)
		}
		if i == len(parts)-1 && kind == createFile {
			f, err := unix.Openat(pfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o644)
			if err == nil {
				unix.Close(f)
			}
			err = ignoreExist(err)
			unix.Close(pfd)
			if err != nil {
				return -1, err
			}
		} else {
			err := ignoreExist(unix.Mkdirat(pfd, name, 0o755))
			unix.Close(pfd)
			if err != nil {
				return -1, err
			}
		}
		cur = next
		if i == len(parts)-1 {
			return unix.Openat2(rootFD, cur, how)
		}
	}
	return unix.Openat2(rootFD, cur, how)
}

func ignoreExist(err error) error {
	if errors.Is(err, unix.EEXIST) {
		return nil
	}
	return err
}

func fdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// readOnlyTree makes every mount at and below root read-only.
func readOnlyTree(root string) error {
	err := unix.MountSetattr(-1, root, unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.ENOSYS) {
		return fmt.Errorf("make the host's tree read-only (mount_setattr): %w", err)
	}
	// Kernels before 5.12: remount each mount read-only, keeping its flags.
	mounts, err := readMountinfo()
	if err != nil {
		return err
	}
	for _, m := range mounts {
		if !under(m.point, root) {
			continue
		}
		flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
		for _, o := range strings.Split(m.opts, ",") {
			switch o {
			case "nosuid":
				flags |= unix.MS_NOSUID
			case "nodev":
				flags |= unix.MS_NODEV
			case "noexec":
				flags |= unix.MS_NOEXEC
			}
		}
		if err := unix.Mount("", m.point, "", flags, ""); err != nil {
			return fmt.Errorf("make %s read-only: %w", m.point, err)
		}
	}
	return nil
}

// mountInView mounts m in the view at rootFD.
func mountInView(rootFD int, m viewMount) error {
	fd, err := openInRoot(rootFD, m.Target, mountpointKind(m), 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if m.Type != "" {
		if err := unix.Mount(m.Type, fdPath(fd), m.Type, m.Flags, m.Data); err != nil {
			return err
		}
		if m.Type == "tmpfs" && m.Target == "/dev" {
			return devLinks(rootFD)
		}
		return nil
	}
	if err := unix.Mount(m.Source, fdPath(fd), "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", m.Source, err)
	}
	// The new mount, on top of the mount point.
	top, err := openInRoot(rootFD, m.Target, createNone, 0)
	if err != nil {
		return err
	}
	defer unix.Close(top)
	prop := uintptr(unix.MS_PRIVATE)
	if m.Slave {
		prop = unix.MS_SLAVE
	}
	if err := unix.Mount("", fdPath(top), "", prop|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("set propagation: %w", err)
	}
	if m.Readonly || m.RecursiveReadonly {
		flags := uint(unix.AT_EMPTY_PATH)
		if m.RecursiveReadonly {
			flags |= unix.AT_RECURSIVE
		}
		err := unix.MountSetattr(top, "", flags, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
		if errors.Is(err, unix.ENOSYS) && !m.RecursiveReadonly {
			err = unix.Mount("", fdPath(top), "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, "")
		}
		if err != nil {
			return fmt.Errorf("make read-only: %w", err)
		}
	}
	return nil
}

// devLinks creates /dev's usual symbolic links in a fresh /dev.
func devLinks(rootFD int) error {
	dev, err := openInRoot(rootFD, "/dev", createNone, 0)
	if err != nil {
		return err
	}
	defer unix.Close(dev)
	for name, target := range map[string]string{
		"ptmx": "pts/ptmx", "fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2",
	} {
		if err := ignoreExist(unix.Symlinkat(target, dev, name)); err != nil {
			return fmt.Errorf("/dev/%s: %w", name, err)
		}
	}
	return nil
}

// enterView makes root the process' root and drops the host's tree.
func enterView(root string) error {
	if err := unix.Chdir(root); err != nil {
		return err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the host's tree: %w", err)
	}
	return unix.Chdir("/")
}
