package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/actorlet/actorlet/cri/procruntime"
)

// benchIdle is section 5: the real actorlet binary, as a process on its
// embedded process runtime and embedded NATS, idle with 0 and with
// e.idlePods running pods.
func benchIdle(ctx context.Context, e *env) error {
	bin := filepath.Join(e.dir, "actorlet")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/actorlet")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build the actorlet binary (run from the repository root): %w\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	node := "bench-idle-" + e.run
	root := filepath.Join(e.dir, "idle")
	logf, err := os.Create(filepath.Join(e.dir, "idle-agent.log"))
	if err != nil {
		return fmt.Errorf("create the agent's log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "--node-name", node, "--root-dir", root, "--nats-port", strconv.Itoa(port), "--healthz-port", "0", "--cgroups-per-qos=false")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start actorlet: %w", err)
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	defer stopIdleAgent(cmd, root)

	c, err := connectWithin(ctx, fmt.Sprintf("nats://127.0.0.1:%d", port), 30*time.Second)
	if err != nil {
		return err
	}
	defer c.close()
	w, err := c.watchStatus(ctx, statusFilter(node, benchNamespace))
	if err != nil {
		return err
	}
	defer w.stop()

	t := newTable(fmt.Sprintf("Idle cost of the actorlet binary (process runtime, embedded NATS), %s windows", e.window),
		"running pods", "agent CPU (% core)", "agent RSS (MiB)")
	measure := func(pods int) error {
		// Let start-up settle before the window.
		select {
		case <-time.After(5 * time.Second):
		case <-ctx.Done():
			return ctx.Err()
		}
		m, err := startCPU(pid)
		if err != nil {
			return err
		}
		var rssMax int64
		deadline := time.Now().Add(e.window)
		for time.Now().Before(deadline) {
			if r, err := procRSS(pid); err == nil && r > rssMax {
				rssMax = r
			}
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		pct, err := m.percent()
		if err != nil {
			return err
		}
		t.add(pods, fmt.Sprintf("%.2f", pct), fmt.Sprintf("%.1f", float64(rssMax)/(1<<20)))
		return nil
	}
	if err := measure(0); err != nil {
		return err
	}
	values, err := podSpec{image: "bench/sleep:1", command: []string{"sleep", "3600"}, run: e.run}.nodePods(node, "idle", e.idlePods)
	if err != nil {
		return err
	}
	if err := c.put(ctx, values); err != nil {
		return err
	}
	if err := waitFor(ctx, 5*time.Minute, "idle pods Running", func() bool { return w.count(isRunning) >= e.idlePods }); err != nil {
		return err
	}
	if err := measure(e.idlePods); err != nil {
		return err
	}
	t.note("`actorlet --node-name %s --root-dir <tmp> --nats-port <free> --healthz-port 0 --cgroups-per-qos=false`: embedded NATS and the embedded process runtime, defaults otherwise (relist 1 s, heartbeat 10 s, sync 1 min)", node)
	t.note("agent CPU: utime+stime of the agent process from /proc/<pid>/stat over the window; RSS: the largest VmRSS sampled each second; pods run `sleep 3600`")
	t.note("not counted: the per-container shim processes (each a re-executed actorlet binary waiting on its container); the process runtime streams events, so the PLEG does not relist every second")
	if err := c.purge(ctx, keysOf(values)); err != nil {
		return err
	}
	_ = waitFor(ctx, 2*time.Minute, "idle pods removed", func() bool {
		return w.count(func(p *podState) bool { return !p.removed.IsZero() }) >= e.idlePods
	})
	e.report.emit(t)
	return nil
}

// stopIdleAgent stops the agent, then kills any container it left behind
// (SIGTERM leaves pods running by design).
func stopIdleAgent(cmd *exec.Cmd, root string) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	if rt, err := procruntime.New(procruntime.Options{RootDir: filepath.Join(root, "runtime")}); err == nil {
		rt.Destroy()
	}
}

func connectWithin(ctx context.Context, url string, timeout time.Duration) (*client, error) {
	deadline := time.Now().Add(timeout)
	for {
		c, err := dialBus(ctx, url)
		if err == nil {
			return c, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("connect to the agent's embedded NATS: %w", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
