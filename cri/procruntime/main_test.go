package procruntime_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/actorlet/actorlet/test/testutil"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/cri/procruntime"
)

func TestMain(m *testing.M) {
	procruntime.MaybeRunShim()
	maybeServe()
	os.Exit(m.Run())
}

// serveRootEnv and serveSockEnv make the test binary, re-executed, a
// standalone runtime that tests kill -9 (see crash_test.go).
const (
	serveRootEnv = "PROCRUNTIME_TEST_SERVE_ROOT"
	serveSockEnv = "PROCRUNTIME_TEST_SERVE_SOCK"
)

func maybeServe() {
	root, sock := os.Getenv(serveRootEnv), os.Getenv(serveSockEnv)
	if root == "" || sock == "" {
		return
	}
	if _, err := procruntime.Start(procruntime.Options{RootDir: root}, "unix://"+sock); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
	select {}
}

// env is a process runtime served on a socket in a temp dir, and a client.
type env struct {
	t       *testing.T
	root    string
	sock    string
	logDir  string
	rt      *procruntime.Runtime
	c       *cri.Client
	counter int
	iso     procruntime.Isolation
	hide    []string // Options.HidePaths
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{t: t, root: filepath.Join(dir, "state"), sock: filepath.Join(dir, "cri.sock"), logDir: filepath.Join(dir, "logs")}
	e.start()
	return e
}

// start (re)starts the runtime on e.root and dials it.
func (e *env) start() {
	e.t.Helper()
	rt, err := procruntime.Start(procruntime.Options{RootDir: e.root, Isolation: e.iso, HidePaths: e.hide}, "unix://"+e.sock)
	if err != nil {
		e.t.Fatalf("Start: %v", err)
	}
	e.t.Cleanup(rt.Destroy)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := cri.Dial(ctx, "unix://"+e.sock)
	if err != nil {
		e.t.Fatalf("Dial: %v", err)
	}
	e.t.Cleanup(func() { _ = c.Close() })
	e.rt, e.c = rt, c
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func (e *env) sandboxConfig(name string, labels map[string]string) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: "uid-" + name},
		LogDirectory: filepath.Join(e.logDir, "default_"+name),
		Hostname:     name,
		Labels:       labels,
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
		}},
	}
}

func (e *env) runSandbox(name string, labels map[string]string) (string, *runtimeapi.PodSandboxConfig) {
	e.t.Helper()
	cfg := e.sandboxConfig(name, labels)
	id, err := e.c.RunPodSandbox(ctx(e.t), cfg, "")
	if err != nil {
		e.t.Fatalf("RunPodSandbox: %v", err)
	}
	return id, cfg
}

func containerConfig(name string, labels map[string]string, cmd ...string) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: "busybox"},
		Command:  cmd[:1],
		Args:     cmd[1:],
		Envs:     []*runtimeapi.KeyValue{{Key: "GREETING", Value: []byte("hello")}},
		LogPath:  name + "/0.log",
		Labels:   labels,
	}
}

// create creates a container and returns its ID.
func (e *env) create(sandboxID string, sb *runtimeapi.PodSandboxConfig, cfg *runtimeapi.ContainerConfig) string {
	e.t.Helper()
	if _, err := e.c.PullImage(ctx(e.t), cfg.Image, nil, sb); err != nil {
		e.t.Fatalf("PullImage %s: %v", cfg.Image.Image, err)
	}
	id, err := e.c.CreateContainer(ctx(e.t), sandboxID, cfg, sb)
	if err != nil {
		e.t.Fatalf("CreateContainer %s: %v", cfg.Metadata.Name, err)
	}
	return id
}

// run creates and starts a container and returns its ID.
func (e *env) run(sandboxID string, sb *runtimeapi.PodSandboxConfig, cfg *runtimeapi.ContainerConfig) string {
	e.t.Helper()
	id := e.create(sandboxID, sb, cfg)
	if err := e.c.StartContainer(ctx(e.t), id); err != nil {
		e.t.Fatalf("StartContainer %s: %v", cfg.Metadata.Name, err)
	}
	return id
}

func (e *env) status(id string) *runtimeapi.ContainerStatus {
	e.t.Helper()
	resp, err := e.c.ContainerStatus(ctx(e.t), id, true)
	if err != nil {
		e.t.Fatalf("ContainerStatus: %v", err)
	}
	return resp.Status
}

// waitExited waits until the container is EXITED and returns its status.
func (e *env) waitExited(id string) *runtimeapi.ContainerStatus {
	e.t.Helper()
	var st *runtimeapi.ContainerStatus
	testutil.Eventually(e.t, 10*time.Second, func() error {
		st = e.status(id)
		if st.State != runtimeapi.ContainerState_CONTAINER_EXITED {
			return fmt.Errorf("container is %s", st.State)
		}
		return nil
	})
	return st
}

// pids returns the container's process and shim PIDs.
func (e *env) pids(id string) (pid, shim int) {
	e.t.Helper()
	resp, err := e.c.ContainerStatus(ctx(e.t), id, true)
	if err != nil {
		e.t.Fatalf("ContainerStatus: %v", err)
	}
	pid, _ = strconv.Atoi(resp.Info["pid"])
	shim, _ = strconv.Atoi(resp.Info["shimPid"])
	return pid, shim
}

// groupMembers lists live (non-zombie) processes in process group pgid.
func groupMembers(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(b), ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			out = append(out, pid)
		}
	}
	return out
}
