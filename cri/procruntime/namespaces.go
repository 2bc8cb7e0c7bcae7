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

// Per-sandbox namespaces (see isolation.go): the holder process, entering
// its namespaces, and mapping PIDs between them and the host.

// sandboxEnvVar makes this binary a sandbox holder (see MaybeRunShim).
const sandboxEnvVar = "ACTORLET_PROCRUNTIME_SANDBOX"

const sandboxArgv0 = "actorlet-sandbox"

// resolvEnvVar names the resolv.conf the holder mounts over the host's.
const resolvEnvVar = "ACTORLET_PROCRUNTIME_RESOLV"

// sysctlEnvVar carries the pod's sysctls to the holder (JSON).
const sysctlEnvVar = "ACTORLET_PROCRUNTIME_SYSCTLS"

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
	if r.iso.mode.Filesystem {
		// The pod's /tmp and /dev/shm, shared by its containers, on disk
		// under the sandbox (removed with it).
		for _, d := range []string{podTmpDir, podShmDir} {
			p := filepath.Join(dir, d)
			if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return fmt.Errorf("create the pod's %s: %w", d, err)
			}
			if err := os.Chmod(p, os.ModeSticky|0o777); err != nil {
				return fmt.Errorf("create the pod's %s: %w", d, err)
			}
		}
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

// enterArgsLocked is the nsenter command line that runs a command in
// sandbox sandboxID's namespaces, nil when it has none: its holder's mount
// namespace, or the one at mountNS (a container's filesystem view).
func (r *Runtime) enterArgsLocked(sandboxID, mountNS string) ([]string, error) {
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
	mount := "--mount"
	if mountNS != "" {
		mount += "=" + mountNS
	}
	args := []string{r.iso.nsenter, "--target", strconv.Itoa(s.rec.Holder.PID), mount, "--uts", "--ipc", "--pid"}
	return append(args, "--"), nil
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
