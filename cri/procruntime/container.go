package procruntime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// containerRecord is record.json of a container.
type containerRecord struct {
	ID        string `json:"id"`
	SandboxID string `json:"sandboxId"`
	CreatedAt int64  `json:"createdAt"`
	StartedAt int64  `json:"startedAt,omitempty"`
	ImageRef  string `json:"imageRef"`
	LogPath   string `json:"logPath,omitempty"` // absolute, "" for no log
	Shim      procID `json:"shim"`
	Process   procID `json:"process"`
	// Starting is set, durably, before the shim is forked and cleared once
	// the start is recorded: a record loaded with it set is resolved by
	// resolveStart, never started again.
	Starting bool `json:"starting,omitempty"`
}

// container is a container in memory. The state is derived:
// exit != nil → EXITED; StartedAt == 0 → CREATED; otherwise RUNNING, and a
// monitor goroutine waits for the shim to end.
type container struct {
	rec      containerRecord
	config   *runtimeapi.ContainerConfig
	exit     *exitRecord
	starting bool
	// startDone is closed when the start in progress (a StartContainer, or
	// the resolution of one a previous runtime left) ends.
	startDone chan struct{}
	// done is closed once the exit is recorded (nil until started).
	done chan struct{}
	// resources set by UpdateContainerResources (nil: the config's).
	resources *runtimeapi.LinuxContainerResources
}

func (c *container) state() runtimeapi.ContainerState {
	switch {
	case c.exit != nil:
		return runtimeapi.ContainerState_CONTAINER_EXITED
	case c.rec.StartedAt == 0:
		return runtimeapi.ContainerState_CONTAINER_CREATED
	default:
		return runtimeapi.ContainerState_CONTAINER_RUNNING
	}
}

func (c *container) key() string {
	m := c.config.GetMetadata()
	return containerKey(c.rec.SandboxID, m.GetName(), m.GetAttempt())
}

func (r *Runtime) containerDir(id string) string {
	return filepath.Join(r.opts.RootDir, containersDir, id)
}

func (r *Runtime) loadContainers() error {
	entries, err := os.ReadDir(filepath.Join(r.opts.RootDir, containersDir))
	if err != nil {
		return fmt.Errorf("procruntime: load containers: %w", err)
	}
	var adopted, resolving []*container
	for _, e := range entries {
		dir := r.containerDir(e.Name())
		c := &container{config: &runtimeapi.ContainerConfig{}}
		err := readState(dir, &c.rec, c.config)
		if err == nil {
			if _, ok := r.sandboxes[c.rec.SandboxID]; !ok {
				err = fmt.Errorf("sandbox %q is gone", c.rec.SandboxID)
			}
		}
		if err != nil {
			// CreateContainer or RemovePodSandbox crashed half-way.
			klog.InfoS("Removing incomplete container state", "dir", dir, "err", err)
			_ = os.RemoveAll(dir)
			continue
		}
		var ex exitRecord
		switch err := readJSON(filepath.Join(dir, exitFile), &ex); {
		case err == nil:
			c.exit = &ex
		case !errors.Is(err, os.ErrNotExist):
			return fmt.Errorf("procruntime: load container %q: %w", c.rec.ID, err)
		}
		r.loadResources(c)
		r.setCgroupParent(c.rec.ID, r.sandboxes[c.rec.SandboxID].config)
		r.containers[c.rec.ID] = c
		r.names[c.key()] = c.rec.ID
		if c.exit == nil && c.rec.Starting {
			// The previous runtime stopped in the middle of starting it.
			c.starting = true
			c.startDone = make(chan struct{})
			resolving = append(resolving, c)
			continue
		}
		if c.exit != nil && c.rec.Starting {
			var st startedRecord
			if readJSON(filepath.Join(dir, startedFile), &st) == nil {
				c.rec.StartedAt, c.rec.Shim, c.rec.Process = st.StartedAt, st.Shim, st.Process
			}
			c.rec.Starting = false
		}
		if c.exit == nil && c.rec.StartedAt != 0 {
			c.done = make(chan struct{})
			klog.InfoS("Adopting container", "containerID", c.rec.ID, "shimPID", c.rec.Shim.PID, "pid", c.rec.Process.PID)
			adopted = append(adopted, c)
		}
	}
	// Watch the adopted shims only once every record is loaded: a shim that
	// already exited makes its watcher read the maps at once.
	for _, c := range adopted {
		go r.pollShim(c)
	}
	// Starts a previous runtime left half-done: wait (bounded) for them to
	// settle, so that a client sees them RUNNING or EXITED at once.
	deadline := time.NewTimer(resolveWait)
	defer deadline.Stop()
	for _, c := range resolving {
		go r.resolveStart(c)
	}
	for _, c := range resolving {
		select {
		case <-c.startDone:
		case <-deadline.C:
			klog.InfoS("Container starts of the previous runtime still resolving; continuing in the background", "containers", len(resolving))
			return nil
		}
	}
	return nil
}

// CreateContainer records a CREATED container in a READY sandbox.
func (r *Runtime) CreateContainer(ctx context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	config := req.GetConfig()
	switch {
	case config == nil:
		return nil, status.Error(codes.InvalidArgument, "config: must be set")
	case config.GetMetadata().GetName() == "":
		return nil, status.Error(codes.InvalidArgument, "config.metadata.name: must not be empty")
	case config.GetImage().GetImage() == "":
		return nil, status.Error(codes.InvalidArgument, "config.image.image: must not be empty")
	case len(config.GetCommand())+len(config.GetArgs()) == 0:
		return nil, status.Error(codes.InvalidArgument, "config.command: must not be empty (the process runtime has no image entrypoint)")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s, err := lookup(r.sandboxes, "sandbox", req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	if s.state() != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, status.Errorf(codes.FailedPrecondition, "create container %q: sandbox %q is not ready", config.GetMetadata().GetName(), s.rec.ID)
	}
	img, err := r.containerImageLocked(config.GetImage().GetImage())
	if err != nil {
		return nil, err
	}
	if _, err := containerCredential(config); err != nil {
		return nil, err
	}
	if err := r.checkContainerMounts(config); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	c := &container{
		rec: containerRecord{
			ID:        newID(),
			SandboxID: s.rec.ID,
			CreatedAt: time.Now().UnixNano(),
			ImageRef:  img.ID,
		},
		config: config,
	}
	if config.GetLogPath() != "" {
		c.rec.LogPath = filepath.Join(s.config.GetLogDirectory(), config.GetLogPath())
		if !filepath.IsAbs(c.rec.LogPath) {
			return nil, status.Errorf(codes.InvalidArgument, "config.log_path %q: must be absolute once joined to the sandbox log directory %q", config.GetLogPath(), s.config.GetLogDirectory())
		}
	}
	if err := r.reserveName(c.key(), c.rec.ID); err != nil {
		return nil, err
	}
	dir := r.containerDir(c.rec.ID)
	err = os.Mkdir(dir, 0o700)
	if err == nil {
		err = writeProto(filepath.Join(dir, "config.json"), config)
	}
	if err == nil {
		err = writeJSON(filepath.Join(dir, "record.json"), c.rec)
	}
	if err != nil {
		delete(r.names, c.key())
		_ = os.RemoveAll(dir)
		return nil, status.Errorf(codes.Internal, "create container %q: %v", config.GetMetadata().GetName(), err)
	}
	r.containers[c.rec.ID] = c
	r.setCgroupParent(c.rec.ID, s.config)
	r.publishContainerLocked(c, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT)
	return &runtimeapi.CreateContainerResponse{ContainerId: c.rec.ID}, nil
}

// StartContainer starts a CREATED container under a new shim. If the
// process cannot start (no such command) the container becomes EXITED with
// code 128 and reason StartError, and the call fails with Unknown.
func (r *Runtime) StartContainer(ctx context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	r.mu.Lock()
	c, err := lookup(r.containers, "container", req.GetContainerId())
	if err != nil {
		r.mu.Unlock()
		return nil, err
	}
	if c.starting {
		r.mu.Unlock()
		return nil, status.Errorf(codes.FailedPrecondition, "start container %q: a start of it is already in progress", c.rec.ID)
	}
	if st := c.state(); st != runtimeapi.ContainerState_CONTAINER_CREATED {
		r.mu.Unlock()
		return nil, status.Errorf(codes.FailedPrecondition, "start container %q: container is %s, not CREATED", c.rec.ID, st)
	}
	s := r.sandboxes[c.rec.SandboxID]
	if s.state() != runtimeapi.PodSandboxState_SANDBOX_READY {
		r.mu.Unlock()
		return nil, status.Errorf(codes.FailedPrecondition, "start container %q: sandbox %q is not ready", c.rec.ID, s.rec.ID)
	}
	c.starting = true
	c.startDone = make(chan struct{})
	c.rec.Starting = true
	rec := c.rec
	startDone := c.startDone
	spec := shimSpec{
		Args:    append(append([]string{}, c.config.GetCommand()...), c.config.GetArgs()...),
		Env:     containerEnv(c.config, s.config),
		Dir:     workingDir(c.config),
		LogPath: c.rec.LogPath,

		Tty:          c.config.GetTty(),
		Stdin:        c.config.GetStdin(),
		StdinOnce:    c.config.GetStdinOnce(),
		AttachSocket: attachSocketPath(r.opts.RootDir, c.rec.ID),
	}
	cgroups, err := r.containerCgroups(c.rec.ID, resourcesOf(c).GetLinux())
	if err != nil {
		c.starting = false
		r.mu.Unlock()
		return nil, status.Errorf(codes.Internal, "start container %q: %v", c.rec.ID, err)
	}
	spec.Cgroups = cgroups
	if spec.Credential, err = containerCredential(c.config); err != nil {
		c.starting = false
		r.mu.Unlock()
		return nil, err
	}
	if spec.LogPath == "" {
		spec.LogPath = os.DevNull
	}
	if r.iso.mode.Filesystem && s.rec.Holder.PID != 0 {
		spec.Nsenter = r.iso.nsenter
		if spec.View, err = r.writeView(c, s); err != nil {
			c.starting = false
			r.mu.Unlock()
			return nil, status.Errorf(codes.Internal, "start container %q: %v", c.rec.ID, err)
		}
	}
	r.mu.Unlock()

	// Not bound to ctx: once the shim is forked the outcome is recorded
	// whatever the caller does (a canceled caller finds the container
	// RUNNING and stops it).
	cmd, report, spawnErr := r.spawnShim(rec, spec)

	r.mu.Lock()
	defer r.mu.Unlock()
	defer close(startDone)
	c.starting = false
	if _, ok := r.containers[c.rec.ID]; !ok || r.destroyed { // removed while starting
		if cmd != nil {
			_ = report.Process.signalGroup(syscall.SIGKILL)
			_ = cmd.Process.Kill()
			go func() { _ = cmd.Wait() }()
		}
		return nil, status.Errorf(codes.NotFound, "start container %q: removed while starting", c.rec.ID)
	}
	if spawnErr != nil {
		c.rec.Starting = false
		ex := &exitRecord{ExitCode: exitCodeStartError, FinishedAt: time.Now().UnixNano(), Reason: reasonStartError, Message: spawnErr.Error()}
		if err := writeJSON(filepath.Join(r.containerDir(c.rec.ID), exitFile), ex); err != nil {
			klog.ErrorS(err, "Failed to record start error", "containerID", c.rec.ID)
		}
		c.exit = ex
		r.publishContainerLocked(c, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
		return nil, status.Errorf(codes.Unknown, "start container %q: %v", c.rec.ID, spawnErr)
	}
	c.rec.Starting = false
	c.rec.StartedAt = report.StartedAt
	c.rec.Shim = procIDOf(cmd)
	if report.Shim.PID != 0 {
		c.rec.Shim = report.Shim // inside a pod's namespaces: the shim, not nsenter
	}
	c.rec.Process = report.Process
	c.done = make(chan struct{})
	go r.waitShim(c, cmd) // reaps the shim and records the exit either way
	if err := writeJSON(filepath.Join(r.containerDir(c.rec.ID), "record.json"), c.rec); err != nil {
		// started.json (written by the shim) still lets a later runtime
		// adopt it: the container runs.
		klog.ErrorS(err, "Failed to record a container's start; it stays adoptable through its shim's record", "containerID", c.rec.ID)
	}
	r.publishContainerLocked(c, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	klog.V(2).InfoS("Container started", "containerID", c.rec.ID, "pid", report.Process.PID)
	return &runtimeapi.StartContainerResponse{}, nil
}

// spawnShim records the intent to start (rec, "starting"), starts the shim
// for the container holding its lock, and waits for the shim's report. On
// success the shim runs and the returned cmd must be waited for.
func (r *Runtime) spawnShim(rec containerRecord, spec shimSpec) (*exec.Cmd, shimReport, error) {
	dir := r.containerDir(rec.ID)
	if err := writeJSON(filepath.Join(dir, shimSpecFile), spec); err != nil {
		return nil, shimReport{}, err
	}
	// The intent, durable before the process can exist.
	if err := writeJSON(filepath.Join(dir, "record.json"), rec); err != nil {
		return nil, shimReport{}, err
	}
	if err := syncDir(dir); err != nil {
		return nil, shimReport{}, err
	}
	lock, err := lockShim(dir)
	if err != nil {
		return nil, shimReport{}, err
	}
	defer lock.Close()
	shimLog, err := os.OpenFile(filepath.Join(dir, shimLogFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, shimReport{}, fmt.Errorf("open shim log: %w", err)
	}
	defer shimLog.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, shimReport{}, fmt.Errorf("create shim report pipe: %w", err)
	}
	defer pr.Close()
	// What ps shows: "actorlet-shim <id>", not /proc/self/exe; in the
	// sandbox's namespaces when it has them.
	cmd, err := r.shimCommand(rec.ID)
	if err != nil {
		pw.Close()
		return nil, shimReport{}, err
	}
	cmd.Env = append(os.Environ(), shimEnvVar+"="+dir)
	if os.Getenv("GORACE") == "" {
		// A race-enabled binary (tests) otherwise sleeps 1 s on exit,
		// delaying every container's exit by that much.
		cmd.Env = append(cmd.Env, "GORACE=atexit_sleep_ms=0")
	}
	cmd.Stdout, cmd.Stderr = shimLog, shimLog
	cmd.ExtraFiles = []*os.File{pw, lock} // fd 3, fd 4 (shimReportFD, shimLockFD)
	if spec.View != "" {
		// fd 5 (shimMountNSFD): the runtime's mount namespace, which the
		// container's view starts as a copy of (rootfs.go).
		ns, err := os.Open("/proc/self/ns/mnt")
		if err != nil {
			pw.Close()
			return nil, shimReport{}, fmt.Errorf("open the runtime's mount namespace: %w", err)
		}
		defer ns.Close()
		cmd.ExtraFiles = append(cmd.ExtraFiles, ns)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	pw.Close()
	if err != nil {
		return nil, shimReport{}, fmt.Errorf("start shim: %w", err)
	}

	type result struct {
		rep shimReport
		err error
	}
	ch := make(chan result, 1)
	go func() {
		var rep shimReport
		err := json.NewDecoder(pr).Decode(&rep)
		ch <- result{rep, err}
	}()
	var res result
	timeout := time.NewTimer(shimTimeout())
	defer timeout.Stop()
	select {
	case res = <-ch:
	case <-timeout.C:
		res.err = fmt.Errorf("wait for shim: no report in %s", shimTimeout())
	}
	if res.err == nil && res.rep.Error != "" {
		res.err = errors.New(res.rep.Error)
	}
	if res.err == nil && r.iso.mode.Namespaces {
		res.rep.Process, res.err = r.hostProcess(rec.ID, res.rep.Process)
		var st startedRecord
		if res.err == nil && readJSON(filepath.Join(dir, startedFile), &st) == nil {
			if shim, err := r.hostProcess(rec.ID, st.Shim); err == nil && shim.PID != 0 {
				res.rep.Shim = shim
			}
		}
	}
	if res.err != nil {
		if res.rep.Process.PID != 0 {
			_ = res.rep.Process.signalGroup(syscall.SIGKILL)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		killStarted(dir) // a shim that died after starting the process
		return nil, shimReport{}, res.err
	}
	return cmd, res.rep, nil
}

func procIDOf(cmd *exec.Cmd) procID {
	id, err := identify(cmd.Process.Pid)
	if err != nil {
		// The shim is our unreaped child, so it is in /proc even if it
		// exited; only a broken /proc gets here.
		return procID{PID: cmd.Process.Pid}
	}
	return id
}

// defaultTerm is TERM in a terminal when the config does not set it (as
// containerd and CRI-O).
const defaultTerm = "xterm"

// withTerm adds TERM=xterm to env (an exec with a terminal) unless set.
func withTerm(env []string) []string {
	for _, kv := range env {
		if strings.HasPrefix(kv, "TERM=") {
			return env
		}
	}
	return append(env, "TERM="+defaultTerm)
}

// containerEnv is the config's environment plus PATH, HOME, HOSTNAME (and
// TERM with a tty) when the config does not set them.
func containerEnv(config *runtimeapi.ContainerConfig, sb *runtimeapi.PodSandboxConfig) []string {
	env := make([]string, 0, len(config.GetEnvs())+3)
	set := map[string]bool{}
	for _, kv := range config.GetEnvs() {
		env = append(env, kv.GetKey()+"="+string(kv.GetValue()))
		set[kv.GetKey()] = true
	}
	defaults := []struct{ key, value string }{
		{"PATH", os.Getenv("PATH")},
		{"HOME", os.Getenv("HOME")},
		{"HOSTNAME", sb.GetHostname()},
	}
	if config.GetTty() {
		defaults = append(defaults, struct{ key, value string }{"TERM", defaultTerm})
	}
	for _, d := range defaults {
		if d.key == "PATH" && d.value == "" {
			d.value = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
		}
		if !set[d.key] && d.value != "" {
			env = append(env, d.key+"="+d.value)
		}
	}
	return env
}

func workingDir(config *runtimeapi.ContainerConfig) string {
	if d := strings.TrimSpace(config.GetWorkingDir()); d != "" {
		return d
	}
	return "/"
}
