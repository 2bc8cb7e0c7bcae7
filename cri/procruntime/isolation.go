package procruntime

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
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
//
// Without root, or with Options.Isolation.Namespaces / .Cgroups off, the
// runtime runs containers as plain host processes, as before.

// Isolation selects the optional isolation of the process runtime.
type Isolation struct {
	// Namespaces: per-sandbox UTS, IPC, mount and PID namespaces. Needs
	// root and nsenter(1).
	Namespaces bool
	// Cgroups: a cgroup per container, for accounting and limits. Needs
	// root and writable cgroup v1 memory, cpu and cpuacct hierarchies.
	Cgroups bool
}

func (i Isolation) String() string {
	var parts []string
	if i.Namespaces {
		parts = append(parts, "namespaces")
	}
	if i.Cgroups {
		parts = append(parts, "cgroups")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}

// ParseIsolation reads "auto" (DefaultIsolation), "none", "namespaces",
// "cgroups" or "namespaces,cgroups".
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
		default:
			return Isolation{}, fmt.Errorf("%q: want auto, none, namespaces, cgroups or namespaces,cgroups", s)
		}
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
	return Isolation{Namespaces: err == nil, Cgroups: cgErr == nil}
}

// cgroupControllers are the v1 controllers a container's cgroup spans.
var cgroupControllers = []string{"memory", "cpu", "cpuacct", "pids"}

const cgroupParent = "actorlet"

// cgroupMounts finds the writable v1 hierarchy of each controller.
func cgroupMounts() (map[string]string, error) {
	out := map[string]string{}
	for _, ctrl := range cgroupControllers {
		for _, dir := range []string{ctrl, "cpu,cpuacct", "cpuacct,cpu"} {
			p := filepath.Join("/sys/fs/cgroup", dir)
			if dir != ctrl && !strings.Contains(dir, ctrl) {
				continue
			}
			if _, err := os.Stat(filepath.Join(p, "cgroup.procs")); err == nil {
				out[ctrl] = p
				break
			}
		}
		if out[ctrl] == "" {
			return nil, fmt.Errorf("cgroup v1 %s hierarchy not found under /sys/fs/cgroup", ctrl)
		}
		if err := os.MkdirAll(filepath.Join(out[ctrl], cgroupParent), 0o755); err != nil {
			return nil, fmt.Errorf("cgroup %s: %w", ctrl, err)
		}
	}
	return out, nil
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
	return iso, nil
}

// ---- sandbox namespaces ----

// sandboxEnvVar makes this binary a sandbox holder (see MaybeRunShim).
const sandboxEnvVar = "ACTORLET_PROCRUNTIME_SANDBOX"

const sandboxArgv0 = "actorlet-sandbox"

// resolvEnvVar names the resolv.conf the holder mounts over the host's.
const resolvEnvVar = "ACTORLET_PROCRUNTIME_RESOLV"

// sysctlEnvVar carries the pod's sysctls to the holder (JSON).
const sysctlEnvVar = "ACTORLET_PROCRUNTIME_SYSCTLS"

// maxSysctls bounds a pod's sysctls.
const maxSysctls = 64

// checkSysctls accepts only sysctls of the namespaces a sandbox owns
// (IPC: kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.*; UTS:
// kernel.hostname, kernel.domainname): anything else would change the host
// (there is no network namespace, so no net.*).
func checkSysctls(sysctls map[string]string, namespaces bool, opts *runtimeapi.NamespaceOption) error {
	if len(sysctls) == 0 {
		return nil
	}
	if len(sysctls) > maxSysctls {
		return fmt.Errorf("config.linux.sysctls: %d entries, limit is %d", len(sysctls), maxSysctls)
	}
	if !namespaces {
		return errors.New("config.linux.sysctls: need the runtime's namespace isolation (root); they would change the host")
	}
	for k, v := range sysctls {
		ipc := strings.HasPrefix(k, "kernel.shm") || strings.HasPrefix(k, "kernel.msg") || k == "kernel.sem" || strings.HasPrefix(k, "fs.mqueue.")
		uts := k == "kernel.hostname" || k == "kernel.domainname"
		switch {
		case ipc && opts.GetIpc() == runtimeapi.NamespaceMode_NODE:
			return fmt.Errorf("config.linux.sysctls %q: the pod shares the host's IPC namespace", k)
		case !ipc && !uts:
			return fmt.Errorf("config.linux.sysctls %q: not in a namespace the process runtime gives a pod (IPC, UTS)", k)
		case strings.Contains(k, "/") || strings.Contains(k, "..") || len(v) > 4096:
			return fmt.Errorf("config.linux.sysctls %q: malformed", k)
		}
	}
	return nil
}

// maxDNSEntries and maxDNSEntry bound a pod's DNS config.
const (
	maxDNSEntries = 32
	maxDNSEntry   = 256
)

// checkDNS refuses a DNS config that is too large or would inject lines
// into resolv.conf.
func checkDNS(dns *runtimeapi.DNSConfig) error {
	for field, vals := range map[string][]string{"servers": dns.GetServers(), "searches": dns.GetSearches(), "options": dns.GetOptions()} {
		if len(vals) > maxDNSEntries {
			return fmt.Errorf("config.dns_config.%s: %d entries, limit is %d", field, len(vals), maxDNSEntries)
		}
		for _, v := range vals {
			if len(v) == 0 || len(v) > maxDNSEntry || strings.ContainsAny(v, " \t\r\n") {
				return fmt.Errorf("config.dns_config.%s %.40q: empty, longer than %d bytes or with whitespace", field, v, maxDNSEntry)
			}
		}
	}
	return nil
}

// resolvConf renders the pod's DNS config.
func resolvConf(dns *runtimeapi.DNSConfig) []byte {
	var b strings.Builder
	for _, s := range dns.GetServers() {
		fmt.Fprintf(&b, "nameserver %s\n", s)
	}
	if len(dns.GetSearches()) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(dns.GetSearches(), " "))
	}
	if len(dns.GetOptions()) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(dns.GetOptions(), " "))
	}
	return []byte(b.String())
}

// holderTimeout bounds the holder's setup.
const holderTimeout = 10 * time.Second

// startHolder starts the namespace holder of sandbox s (hostname h).
func (r *Runtime) startHolder(s *sandbox) error {
	opts := s.config.GetLinux().GetSecurityContext().GetNamespaceOptions()
	flags := uintptr(syscall.CLONE_NEWUTS | syscall.CLONE_NEWNS)
	if opts.GetIpc() != runtimeapi.NamespaceMode_NODE {
		flags |= syscall.CLONE_NEWIPC
	}
	if opts.GetPid() != runtimeapi.NamespaceMode_NODE {
		flags |= syscall.CLONE_NEWPID
	}
	dir := r.sandboxDir(s.rec.ID)
	logf, err := os.OpenFile(filepath.Join(dir, "holder.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open holder log: %w", err)
	}
	defer logf.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("create holder pipe: %w", err)
	}
	defer pr.Close()
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{sandboxArgv0, s.rec.ID}
	cmd.Env = append(os.Environ(), sandboxEnvVar+"="+s.config.GetHostname())
	if sc := s.config.GetLinux().GetSysctls(); len(sc) > 0 {
		b, err := json.Marshal(sc)
		if err != nil {
			return err
		}
		cmd.Env = append(cmd.Env, sysctlEnvVar+"="+string(b))
	}
	if dns := s.config.GetDnsConfig(); dns != nil {
		path := filepath.Join(dir, "resolv.conf")
		if err := os.WriteFile(path, resolvConf(dns), 0o644); err != nil {
			return fmt.Errorf("write resolv.conf: %w", err)
		}
		cmd.Env = append(cmd.Env, resolvEnvVar+"="+path)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{pw}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Cloneflags: flags}
	err = cmd.Start()
	pw.Close()
	if err != nil {
		return fmt.Errorf("start sandbox holder: %w", err)
	}
	go func() { _ = cmd.Wait() }() // reap it whenever it ends
	ready := make(chan error, 1)
	go func() {
		var rep struct{ Error string }
		err := json.NewDecoder(pr).Decode(&rep)
		if err == nil && rep.Error != "" {
			err = errors.New(rep.Error)
		}
		ready <- err
	}()
	select {
	case err = <-ready:
	case <-time.After(holderTimeout):
		err = fmt.Errorf("no answer after %s", holderTimeout)
	}
	if err != nil {
		_ = cmd.Process.Kill()
		return fmt.Errorf("sandbox holder: %w", err)
	}
	id, err := identify(cmd.Process.Pid)
	if err != nil {
		_ = cmd.Process.Kill()
		return err
	}
	s.rec.Holder = id
	return nil
}

// stopHolder kills the holder (and so whatever is left in its PID
// namespace) and waits for it to go.
func stopHolder(p procID) {
	if p.PID == 0 {
		return
	}
	_ = p.signal(syscall.SIGKILL)
	deadline := time.Now().Add(5 * time.Second)
	for p.alive() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

// runHolder is the holder: it sets up the namespaces it was born in,
// reports on fd 3 and reaps orphans as its PID namespace's init until
// killed.
func runHolder(hostname string) {
	report := os.NewFile(3, "holder-report")
	fail := func(err error) {
		_ = json.NewEncoder(report).Encode(map[string]string{"Error": err.Error()})
		os.Exit(1)
	}
	// Nothing mounted here may propagate to the host.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		fail(fmt.Errorf("make mounts private: %w", err))
	}
	if resolv := os.Getenv(resolvEnvVar); resolv != "" {
		if err := unix.Mount(resolv, "/etc/resolv.conf", "", unix.MS_BIND, ""); err != nil {
			fail(fmt.Errorf("mount the pod's resolv.conf: %w", err))
		}
	}
	if os.Getpid() == 1 {
		if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			fail(fmt.Errorf("mount /proc: %w", err))
		}
	}
	if hostname != "" {
		if err := unix.Sethostname([]byte(hostname)); err != nil {
			fail(fmt.Errorf("set hostname %q: %w", hostname, err))
		}
	}
	if raw := os.Getenv(sysctlEnvVar); raw != "" {
		var sysctls map[string]string
		if err := json.Unmarshal([]byte(raw), &sysctls); err != nil {
			fail(fmt.Errorf("sysctls: %w", err))
		}
		for k, v := range sysctls {
			p := "/proc/sys/" + strings.ReplaceAll(k, ".", "/")
			if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
				fail(fmt.Errorf("sysctl %s=%s: %w", k, v, err))
			}
		}
	}
	_ = json.NewEncoder(report).Encode(map[string]string{})
	report.Close()
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid > 0 {
			continue
		}
		if err != nil && !errors.Is(err, syscall.ECHILD) && !errors.Is(err, syscall.EINTR) {
			time.Sleep(time.Second)
		}
		select {
		case <-chld:
		case <-time.After(10 * time.Second):
		}
	}
}

// enterArgs is the nsenter command line that runs a command in sandbox
// sandboxID's namespaces, nil when it has none. dir is the working
// directory inside ("" keeps nsenter's default, the root).
func (r *Runtime) enterArgsLocked(sandboxID, dir string) ([]string, error) {
	if r.iso == nil || !r.iso.mode.Namespaces {
		return nil, nil
	}
	s, ok := r.sandboxes[sandboxID]
	if !ok || s.rec.Holder.PID == 0 {
		return nil, nil
	}
	if !s.rec.Holder.alive() {
		return nil, fmt.Errorf("sandbox %q: its namespaces are gone (holder process %d exited)", sandboxID, s.rec.Holder.PID)
	}
	args := []string{r.iso.nsenter, "--target", strconv.Itoa(s.rec.Holder.PID), "--mount", "--uts", "--ipc", "--pid"}
	if dir != "" {
		args = append(args, "--wd="+dir)
	}
	return append(args, "--"), nil
}

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

// hostProcess maps a process the shim identified in its sandbox's PID
// namespace to the host's PID (the runtime signals and watches it there).
func (r *Runtime) hostProcess(id string, p procID) (procID, error) {
	r.mu.Lock()
	var holder procID
	if c, ok := r.containers[id]; ok {
		holder = r.holderLocked(c.rec.SandboxID)
	}
	r.mu.Unlock()
	if holder.PID == 0 {
		return p, nil
	}
	hp, err := hostPIDOf(holder, p)
	if err == nil && hp.PID == 0 {
		// Not there: it already exited (and its shim records the exit).
		klog.V(2).InfoS("Container process already gone when mapping its PID to the host", "containerID", id, "nsPID", p.PID)
	}
	return hp, err
}

// holderLocked is the namespace holder of a sandbox (zero without).
func (r *Runtime) holderLocked(sandboxID string) procID {
	if r.iso == nil || !r.iso.mode.Namespaces {
		return procID{}
	}
	if s, ok := r.sandboxes[sandboxID]; ok {
		return s.rec.Holder
	}
	return procID{}
}

// startedToHost maps the PIDs a shim recorded in started.json (its view,
// inside its sandbox's PID namespace) to the host's.
func (r *Runtime) startedToHost(sandboxID string, st *startedRecord) {
	r.mu.Lock()
	holder := r.holderLocked(sandboxID)
	r.mu.Unlock()
	if holder.PID == 0 || st == nil {
		return
	}
	st.Process, _ = hostPIDOf(holder, st.Process)
	st.Shim, _ = hostPIDOf(holder, st.Shim)
}

// hostPIDOf finds the host PID of p, identified inside holder's PID
// namespace; p itself when that namespace is the runtime's, zero when the
// process is gone (never the namespace's number: on the host it is
// another process).
func hostPIDOf(holder, p procID) (procID, error) {
	if holder.PID == 0 || p.PID == 0 {
		return p, nil
	}
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", holder.PID))
	if err != nil {
		return procID{}, fmt.Errorf("find sandbox PID namespace: %w", err)
	}
	if self, _ := os.Readlink("/proc/self/ns/pid"); self == ns {
		return p, nil // hostPID pod: same namespace
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return procID{}, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid)); l != ns {
			continue
		}
		if innermostPID(pid) != p.PID {
			continue
		}
		if start, _, err := readProcStat(pid); err == nil && start == p.Start {
			return procID{PID: pid, Start: start}, nil
		}
	}
	return procID{}, nil
}

// innermostPID is the last NSpid of /proc/<pid>/status (0 if unknown).
func innermostPID(pid int) int {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "NSpid:"); ok {
			fs := strings.Fields(rest)
			if len(fs) == 0 {
				return 0
			}
			n, _ := strconv.Atoi(fs[len(fs)-1])
			return n
		}
	}
	return 0
}

// ---- cgroups ----

// containerCgroups creates container id's cgroups, writes its resources
// and returns the directories (nil without cgroup isolation).
func (r *Runtime) containerCgroups(id string, res *runtimeapi.LinuxContainerResources) ([]string, error) {
	if r.iso == nil || !r.iso.mode.Cgroups {
		return nil, nil
	}
	var dirs []string
	for _, ctrl := range cgroupControllers {
		d := filepath.Join(r.iso.cgroups[ctrl], cgroupParent, id)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("create cgroup: %w", err)
		}
		dirs = append(dirs, d)
	}
	if err := r.applyResources(id, res); err != nil {
		return nil, err
	}
	return dirs, nil
}

func (r *Runtime) cgroupFile(ctrl, id, file string) string {
	return filepath.Join(r.iso.cgroups[ctrl], cgroupParent, id, file)
}

// applyResources writes memory and CPU limits into the container's
// cgroup, if it has one.
func (r *Runtime) applyResources(id string, res *runtimeapi.LinuxContainerResources) error {
	if r.iso == nil || !r.iso.mode.Cgroups || res == nil {
		return nil
	}
	if _, err := os.Stat(r.cgroupFile("memory", id, "")); err != nil {
		return nil // not started yet: written at start
	}
	write := func(ctrl, file string, v int64) error {
		if err := os.WriteFile(r.cgroupFile(ctrl, id, file), []byte(strconv.FormatInt(v, 10)), 0o644); err != nil {
			return fmt.Errorf("set %s: %w", file, err)
		}
		return nil
	}
	if v := res.GetMemoryLimitInBytes(); v > 0 {
		if err := write("memory", "memory.limit_in_bytes", v); err != nil {
			return err
		}
	}
	if v := res.GetCpuShares(); v > 0 {
		if err := write("cpu", "cpu.shares", v); err != nil {
			return err
		}
	}
	if v := res.GetCpuPeriod(); v > 0 {
		if err := write("cpu", "cpu.cfs_period_us", v); err != nil {
			return err
		}
	}
	if v := res.GetCpuQuota(); v != 0 {
		if err := write("cpu", "cpu.cfs_quota_us", v); err != nil {
			return err
		}
	}
	return nil
}

// cgroupRemoveTimeout bounds the wait for a cgroup to empty.
const cgroupRemoveTimeout = 2 * time.Second

// removeCgroups removes container id's cgroups (its processes are gone).
func (r *Runtime) removeCgroups(id string) {
	if r.iso == nil || !r.iso.mode.Cgroups {
		return
	}
	for _, ctrl := range cgroupControllers {
		d := filepath.Join(r.iso.cgroups[ctrl], cgroupParent, id)
		// A killed container's last processes may still be leaving (a
		// zombie waiting for the pod's init counts): EBUSY for a moment.
		var err error
		for deadline := time.Now().Add(cgroupRemoveTimeout); ; time.Sleep(10 * time.Millisecond) {
			if err = os.Remove(d); err == nil || errors.Is(err, os.ErrNotExist) || !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
				break
			}
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			klog.InfoS("Failed to remove container cgroup", "dir", d, "err", err)
		}
	}
}

// cgroupUsage reads a container's usage from its cgroup.
func (r *Runtime) cgroupUsage(id string) (procUsage, bool) {
	if r.iso == nil || !r.iso.mode.Cgroups {
		return procUsage{}, false
	}
	readUint := func(ctrl, file string) (uint64, bool) {
		b, err := os.ReadFile(r.cgroupFile(ctrl, id, file))
		if err != nil {
			return 0, false
		}
		n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		return n, err == nil
	}
	u := procUsage{at: time.Now(), fromCgroup: true}
	var ok bool
	if u.cpuNanos, ok = readUint("cpuacct", "cpuacct.usage"); !ok {
		return procUsage{}, false
	}
	usage, _ := readUint("memory", "memory.usage_in_bytes")
	// Working set as the kubelet computes it: usage minus inactive file.
	inactive := memoryStat(r.cgroupFile("memory", id, "memory.stat"), "total_inactive_file")
	if inactive < usage {
		u.rssBytes = usage - inactive
	}
	u.processes, _ = readUint("pids", "pids.current")
	return u, true
}

// oomKilled reports whether the kernel's OOM killer killed a process in
// the container's memory cgroup (among dirs).
func oomKilled(dirs []string) bool {
	for _, d := range dirs {
		if n := memoryStat(filepath.Join(d, "memory.oom_control"), "oom_kill"); n > 0 {
			return true
		}
	}
	return false
}

func memoryStat(path, key string) uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+" "); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// joinCgroups moves the calling shim into dirs (its container inherits
// them at fork); leaveCgroups moves it back to the parent.
func joinCgroups(dirs []string) error {
	for _, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte("0"), 0o644); err != nil {
			return fmt.Errorf("join cgroup %s: %w", d, err)
		}
	}
	return nil
}

func leaveCgroups(dirs []string) {
	for _, d := range dirs {
		_ = os.WriteFile(filepath.Join(filepath.Dir(d), "cgroup.procs"), []byte("0"), 0o644)
	}
}
