package procruntime

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/cri"
)

// Options configures a Runtime.
type Options struct {
	// RootDir holds the state: sandboxes/<id>/..., containers/<id>/...
	// (JSON records). Required.
	RootDir string
	// HostIP is reported as every sandbox's IP (default FirstHostIP, the
	// node's address); there is no network isolation.
	HostIP string
	// StreamAddress is the host:port the CRI streaming server (Exec,
	// Attach, PortForward URLs) listens on; default 127.0.0.1 on a free
	// port. It has no authentication: keep it on the loopback.
	StreamAddress string
	// Isolation turns on per-sandbox namespaces, per-container cgroups
	// and filesystem views (isolation.go; DefaultIsolation is what root
	// can have). The zero value runs plain host processes.
	Isolation Isolation
	// SocketGroup, when set (a group name or numeric GID), owns the CRI
	// socket, which is then 0660: its members may drive the runtime.
	// Without it the socket is 0600, the runtime's user only. Either way
	// whatever the umask: a CRI client can run any command as root.
	SocketGroup string
	// HostFilesystem, without Isolation.Filesystem: containers see the
	// host's filesystem and their mounts are not made (the old behaviour:
	// a volume stays at its host path). Otherwise such a runtime refuses
	// a container with a mount that would need a view.
	HostFilesystem bool
	// HidePaths are host directories a filesystem view covers with an
	// empty read-only tmpfs besides RootDir (the agent's state: other
	// pods' volumes, credentials).
	HidePaths []string
}

// FirstHostIP is the node's address: its first non-loopback IPv4
// address, 127.0.0.1 without one.
func FirstHostIP() string {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
				return n.IP.String()
			}
		}
	}
	return "127.0.0.1"
}

// Runtime is the process runtime: a CRI v1 RuntimeService and ImageService.
type Runtime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer

	opts   Options
	boot   string
	events *broadcaster
	server *grpc.Server
	stream *streamServer
	stats  statsCache
	iso    *isolator
	// cgroupParents: container ID → its cgroup parent, when its sandbox
	// has one (cgroups.go).
	cgroupParents sync.Map

	mu         sync.Mutex
	sandboxes  map[string]*sandbox
	containers map[string]*container
	names      map[string]string // reserved sandbox and container names → ID
	images     map[string]*imageRecord
	destroyed  bool

	stopOnce sync.Once
	stopped  chan struct{}
}

var (
	_ runtimeapi.RuntimeServiceServer = &Runtime{}
	_ runtimeapi.ImageServiceServer   = &Runtime{}
)

const (
	sandboxesDir  = "sandboxes"
	containersDir = "containers"
	imagesDir     = "images"
)

// New loads the state under opts.RootDir and re-adopts containers whose
// shims still run. It does not serve: see Serve and Start.
func New(opts Options) (*Runtime, error) {
	if opts.RootDir == "" {
		return nil, errors.New("procruntime: RootDir: must be set")
	}
	if opts.HostIP == "" {
		opts.HostIP = FirstHostIP()
	}
	if net.ParseIP(opts.HostIP) == nil {
		return nil, fmt.Errorf("procruntime: HostIP %q: not an IP address", opts.HostIP)
	}
	root, err := filepath.Abs(opts.RootDir)
	if err != nil {
		return nil, fmt.Errorf("procruntime: RootDir %q: %w", opts.RootDir, err)
	}
	opts.RootDir = root
	for _, d := range []string{sandboxesDir, containersDir, imagesDir} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			return nil, fmt.Errorf("procruntime: create state directory: %w", err)
		}
	}
	r := &Runtime{
		opts:       opts,
		boot:       bootID(),
		events:     newBroadcaster(),
		sandboxes:  map[string]*sandbox{},
		containers: map[string]*container{},
		names:      map[string]string{},
		images:     map[string]*imageRecord{},
		stopped:    make(chan struct{}),
	}
	if r.iso, err = newIsolator(opts.Isolation); err != nil {
		return nil, err
	}
	// Without isolation an exec runs from this process directly, not
	// through the shim or the exec wrapper, which take care of it there.
	DefaultSignalsForChildren()
	if err := r.loadImages(); err != nil {
		return nil, err
	}
	if err := r.loadSandboxes(); err != nil {
		return nil, err
	}
	if err := r.loadContainers(); err != nil {
		return nil, err
	}
	if r.stream, err = r.newStreamServer(opts.StreamAddress); err != nil {
		return nil, err
	}
	r.server = grpc.NewServer(
		grpc.MaxRecvMsgSize(cri.MaxMsgSize),
		grpc.MaxSendMsgSize(cri.MaxMsgSize),
	)
	runtimeapi.RegisterRuntimeServiceServer(r.server, r)
	runtimeapi.RegisterImageServiceServer(r.server, r)
	return r, nil
}

// Start creates a Runtime and serves it on the unix endpoint ("unix:///…"
// or a path) in the background. A stale socket file is removed; a socket
// another server still answers on is an error.
func Start(opts Options, endpoint string) (*Runtime, error) {
	path, err := cri.SocketPath(endpoint)
	if err != nil {
		return nil, fmt.Errorf("procruntime: %w", err)
	}
	r, err := New(opts)
	if err != nil {
		return nil, err
	}
	l, err := listenUnix(path, opts.SocketGroup)
	if err != nil {
		r.Stop()
		return nil, err
	}
	go func() {
		if err := r.Serve(l); err != nil {
			klog.ErrorS(err, "Process runtime stopped serving", "endpoint", endpoint)
		}
	}()
	klog.InfoS("Process runtime serving", "endpoint", endpoint, "rootDir", opts.RootDir)
	return r, nil
}

// listenUnix listens on the socket path, mode 0600 (0660 and owned by
// group when one is given) whatever the umask: the socket is made in a
// fresh 0700 directory beside path, given its mode and group there, and
// renamed into place, so no other user can connect in between (a plain
// Listen makes it 0777 &^ umask, srwxrwxrwx under umask 0000).
func listenUnix(path, group string) (net.Listener, error) {
	gid := -1
	if group != "" {
		var err error
		if gid, err = lookupGroup(group); err != nil {
			return nil, fmt.Errorf("procruntime: socket group: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("procruntime: create socket directory: %w", err)
	}
	if _, err := os.Stat(path); err == nil {
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("procruntime: listen on %s: another server is serving there", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("procruntime: remove stale socket %s: %w", path, err)
		}
	}
	tmpDir, err := os.MkdirTemp(filepath.Dir(path), ".cri-sock-") // 0700
	if err != nil {
		return nil, fmt.Errorf("procruntime: listen on %s: %w", path, err)
	}
	defer os.RemoveAll(tmpDir)
	tmp := filepath.Join(tmpDir, "s")
	l, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, fmt.Errorf("procruntime: listen on %s: %w", path, err)
	}
	ul := l.(*net.UnixListener)
	ul.SetUnlinkOnClose(false) // it is renamed: Close removes path below
	mode := os.FileMode(0o600)
	if gid >= 0 {
		mode = 0o660
		if err := os.Chown(tmp, -1, gid); err != nil {
			l.Close()
			return nil, fmt.Errorf("procruntime: socket group %q: %w", group, err)
		}
	}
	if err := os.Chmod(tmp, mode); err != nil {
		l.Close()
		return nil, fmt.Errorf("procruntime: socket mode: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		l.Close()
		return nil, fmt.Errorf("procruntime: listen on %s: %w", path, err)
	}
	return &unlinkListener{UnixListener: ul, path: path}, nil
}

// unlinkListener removes its socket file on Close, as a plain unix
// listener does for the name it was created with.
type unlinkListener struct {
	*net.UnixListener
	path string
	once sync.Once
}

func (l *unlinkListener) Close() error {
	err := l.UnixListener.Close()
	l.once.Do(func() { _ = os.Remove(l.path) })
	return err
}

// lookupGroup resolves a group name or numeric GID.
func lookupGroup(group string) (int, error) {
	if id, err := strconv.Atoi(group); err == nil {
		if id < 0 {
			return 0, fmt.Errorf("%q: a GID must not be negative", group)
		}
		return id, nil
	}
	g, err := user.LookupGroup(group)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", group, err)
	}
	id, err := strconv.Atoi(g.Gid)
	if err != nil {
		return 0, fmt.Errorf("%q: GID %q: %w", group, g.Gid, err)
	}
	return id, nil
}

// Serve serves CRI on l until Stop.
func (r *Runtime) Serve(l net.Listener) error {
	select {
	case <-r.stopped:
		l.Close()
		return errors.New("procruntime: serve after Stop")
	default:
	}
	if err := r.server.Serve(l); err != nil {
		return fmt.Errorf("procruntime: serve: %w", err)
	}
	return nil
}

// Stop stops serving and ends event streams. Containers keep running; a new
// Runtime on the same RootDir adopts them.
func (r *Runtime) Stop() {
	r.stopOnce.Do(func() {
		close(r.stopped)
		r.events.close()
		r.server.Stop()
		r.stream.stop()
	})
}

// isStopped reports whether Stop was called.
func (r *Runtime) isStopped() bool {
	select {
	case <-r.stopped:
		return true
	default:
		return false
	}
}

// Destroy is for tests and cleanup: it stops serving, kills every
// container's process group and shim, waits for them to die and removes
// the state (not the containers' logs).
func (r *Runtime) Destroy() {
	r.mu.Lock()
	r.destroyed = true
	var procs, holders []procID
	var dirs, ids, sandboxIDs []string
	for _, c := range r.containers {
		procs = append(procs, c.rec.Process, c.rec.Shim)
		dirs = append(dirs, r.containerDir(c.rec.ID))
		ids = append(ids, c.rec.ID)
		sandboxIDs = append(sandboxIDs, c.rec.SandboxID)
	}
	for _, s := range r.sandboxes {
		holders = append(holders, s.rec.Holder)
	}
	r.mu.Unlock()
	r.Stop()
	for i, d := range dirs {
		// Starts not yet recorded in r.containers (in progress, or left
		// by a previous runtime) are known by their shim's record.
		var st startedRecord
		if readJSON(filepath.Join(d, startedFile), &st) == nil {
			r.startedToHost(sandboxIDs[i], &st)
			procs = append(procs, st.Process, st.Shim)
		} else if alive, _ := shimAlive(d); alive {
			killShimsOf(d) // forked, its process not yet recorded
		}
	}
	for _, p := range procs {
		if err := p.signalGroup(syscall.SIGKILL); err != nil {
			klog.ErrorS(err, "Failed to kill container process group", "pid", p.PID)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range procs {
		for p.alive() && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	for _, h := range holders {
		stopHolder(h)
	}
	for _, id := range ids {
		r.removeCgroups(id)
	}
	// Attach sockets of a long RootDir live under the temp directory.
	if dir := filepath.Dir(attachSocketPath(r.opts.RootDir, "x")); !strings.HasPrefix(dir, r.opts.RootDir) {
		_ = os.RemoveAll(dir)
	}
	for _, d := range []string{sandboxesDir, containersDir, imagesDir, "attach"} {
		if err := os.RemoveAll(filepath.Join(r.opts.RootDir, d)); err != nil {
			klog.ErrorS(err, "Failed to remove process runtime state", "dir", d)
		}
	}
}
