//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/actorlet/actorlet/test/testutil"
)

// agentOptions shape one actorlet process.
type agentOptions struct {
	// natsURL joins an external server; empty runs the embedded one on a
	// free port.
	natsURL string
	// args are extra flags.
	args []string
}

// agent is one real actorlet process against containerd. Its root dir, ports
// and node name survive restarts, so a restarted agent is the same node.
type agent struct {
	node        string
	rootDir     string
	logPath     string
	natsPort    int
	healthzPort int
	opts        agentOptions

	cmd  *exec.Cmd
	done chan struct{}
	logf *os.File
}

// startAgent starts an agent for t and registers its cleanup: the run's pods
// are deleted through the agent, the agent is stopped, containerd is swept
// for the namespace, and the log is printed if t failed.
func startAgent(t *testing.T, o agentOptions) *agent {
	t.Helper()
	a := &agent{
		node:        "e2e-" + runID,
		rootDir:     t.TempDir(),
		natsPort:    freePort(t),
		healthzPort: freePort(t),
		opts:        o,
	}
	a.logPath = filepath.Join(a.rootDir, "actorlet.log")
	t.Cleanup(func() { a.cleanup(t) })
	a.start(t)
	return a
}

// natsURL is the bus the agent is on.
func (a *agent) natsURL() string {
	if a.opts.natsURL != "" {
		return a.opts.natsURL
	}
	return fmt.Sprintf("nats://127.0.0.1:%d", a.natsPort)
}

// start runs the process and waits until /healthz answers and the node is
// registered on the bus.
func (a *agent) start(t *testing.T) {
	t.Helper()
	args := []string{
		"--container-runtime-endpoint", criEndpoint,
		"--root-dir", a.rootDir,
		"--node-name", a.node,
		"--healthz-port", strconv.Itoa(a.healthzPort),
		"--relist-period", "500ms",
		"--node-status-update-frequency", "2s",
		"--node-ip", "127.0.0.1",
		// No QoS cgroups unless a scenario asks (with a --cgroup-root of
		// its own, removed at its end): a /kubepods left behind is not
		// the run's to leave.
		"--cgroups-per-qos=false",
		// No image garbage collection unless a scenario asks: the suite's
		// images cannot be pulled again (no registry), and the machine's
		// other images are not the run's.
		"--image-gc-high-threshold", "100",
	}
	if a.opts.natsURL != "" {
		args = append(args, "--nats-url", a.opts.natsURL)
	} else {
		args = append(args, "--nats-port", strconv.Itoa(a.natsPort))
	}
	if v := os.Getenv("ACTORLET_E2E_V"); v != "" {
		args = append(args, "-v", v) // agent log verbosity, for debugging a failing scenario
	}
	args = append(args, a.opts.args...)
	f, err := os.OpenFile(a.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("open agent log: %v", err)
	}
	fmt.Fprintf(f, "==== %s start: actorlet %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(args, " "))
	cmd := exec.Command(actorletBin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start actorlet: %v", err)
	}
	a.cmd, a.logf, a.done = cmd, f, make(chan struct{})
	go func(done chan struct{}) { cmd.Wait(); close(done) }(a.done)

	eventually(t, 30*time.Second, func() error {
		select {
		case <-a.done:
			return fmt.Errorf("actorlet exited: %v\n%s", cmd.ProcessState, a.logTail(40))
		default:
		}
		if err := a.healthz(); err != nil {
			return err
		}
		out, _, err := a.ctl("get", "nodes")
		if err != nil {
			return err
		}
		if !strings.Contains(out, a.node) {
			return fmt.Errorf("node %s not registered:\n%s", a.node, out)
		}
		return nil
	})
}

func (a *agent) running() bool {
	if a.cmd == nil {
		return false
	}
	select {
	case <-a.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL: the agent dies at once, as in a crash.
func (a *agent) kill(t *testing.T) { a.signal(t, syscall.SIGKILL, 10*time.Second) }

// stop sends SIGTERM: the agent stops and leaves its pods running.
func (a *agent) stop(t *testing.T) { a.signal(t, syscall.SIGTERM, 20*time.Second) }

func (a *agent) signal(t *testing.T, sig syscall.Signal, wait time.Duration) {
	t.Helper()
	if !a.running() {
		return
	}
	_ = a.cmd.Process.Signal(sig)
	select {
	case <-a.done:
	case <-time.After(wait):
		t.Errorf("actorlet did not exit %s after %s; killing it", wait, sig)
		_ = a.cmd.Process.Kill()
		<-a.done
	}
	a.logf.Close()
}

// healthz is nil when /healthz answers 200.
func (a *agent) healthz() error {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", a.healthzPort))
	if err != nil {
		return fmt.Errorf("healthz: %w", err)
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthz: %s: %s", resp.Status, strings.TrimSpace(body.String()))
	}
	return nil
}

// cleanup deletes the run's pods through the agent, stops it, sweeps
// containerd for the namespace and shows the log of a failed test.
func (a *agent) cleanup(t *testing.T) {
	if a.running() {
		ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
		defer cancel()
		if pods, err := a.pods(); err == nil {
			for name := range pods {
				if _, stderr, err := a.ctl("delete", "pod", name, "-n", namespace, "--now", "--node", a.node); err != nil {
					t.Logf("cleanup: delete pod %s: %v: %s", name, err, stderr)
				}
			}
		}
		// Until the agent has cleaned the pods up: their sandboxes
		// removed and their memory emptyDirs unmounted (which the agent
		// does right after the removal).
		if c, err := dialCRI(ctx); err == nil {
			for ctx.Err() == nil {
				sbs, err := sandboxesIn(ctx, c, namespace)
				if err != nil || len(sbs) == 0 && len(testutil.MountsUnder(t, a.rootDir)) == 0 {
					break
				}
				time.Sleep(250 * time.Millisecond)
			}
			c.Close()
		}
		a.stop(t)
	}
	// What a stopped or killed agent left mounted under its root (a
	// memory emptyDir of a pod swept below) goes, or the temp dir could
	// not be removed and the mount would stay on the host.
	left := testutil.MountsUnder(t, a.rootDir)
	for i := len(left) - 1; i >= 0; i-- { // mounts below others first
		if f := strings.Fields(left[i]); len(f) > 4 {
			if err := syscall.Unmount(f[4], syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
				t.Errorf("cleanup: unmount %s: %v", f[4], err)
			}
		}
	}
	if n, err := sweepNamespace(namespace); err != nil {
		t.Errorf("cleanup: sweep namespace %s: %v", namespace, err)
	} else if n > 0 {
		t.Logf("cleanup: swept %d sandboxes of %s", n, namespace)
	}
	if t.Failed() || os.Getenv("ACTORLET_E2E_KEEP_LOGS") != "" {
		// Kept after the temp dir goes, for a closer look.
		keep := filepath.Join(os.TempDir(), "actorlet-e2e-logs", runID, strings.ReplaceAll(t.Name(), "/", "_")+".log")
		if b, err := os.ReadFile(a.logPath); err == nil && os.MkdirAll(filepath.Dir(keep), 0o755) == nil && os.WriteFile(keep, b, 0o644) == nil {
			a.logPath = keep
		}
		if t.Failed() {
			t.Logf("actorlet log (%s), last lines:\n%s", a.logPath, a.logTail(150))
		}
	}
}

// logTail returns the last n lines of the agent's log.
func (a *agent) logTail(n int) string {
	f, err := os.Open(a.logPath)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > 4*n {
			lines = lines[len(lines)-n:]
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// logGrep returns the last n lines of the agent's log that contain s.
func (a *agent) logGrep(s string, n int) string {
	b, err := os.ReadFile(a.logPath)
	if err != nil {
		return err.Error()
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, s) {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// logContains reports whether the agent's log has s.
func (a *agent) logContains(s string) bool {
	b, err := os.ReadFile(a.logPath)
	return err == nil && bytes.Contains(b, []byte(s))
}

// freePort returns a TCP port free on loopback right now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// eventually polls cond every 200 ms until it returns nil, or fails t with
// its last error after timeout.
func eventually(t *testing.T, timeout time.Duration, cond func() error) {
	t.Helper()
	testutil.EventuallyEvery(t, timeout, 200*time.Millisecond, cond)
}
