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
	"github.com/actorlet/actorlet/test/e2eenv"
)

// idleRuntime is one runtime the idle section runs the agent binary on.
type idleRuntime struct {
	name  string   // printed in the table
	flags []string // the agent's runtime flags
	image string
	pid   string // the runtime's own process ("" when it is the agent's)
}

// idleRuntimes is the embedded process runtime, and containerd too where
// -runtime picks it (as the start section does).
func idleRuntimes(ctx context.Context, e *env) ([]idleRuntime, error) {
	out := []idleRuntime{{name: "embedded process runtime", image: "bench/sleep:1"}}
	if e.runtime == "process" {
		return out, nil
	}
	rt, err := openContainerd(ctx)
	if err != nil {
		if e.runtime == "containerd" {
			return nil, err
		}
		return out, nil
	}
	defer rt.close()
	ctrd, err := e2eenv.Load(e2eenv.Flavor())
	if err != nil {
		return nil, err
	}
	return append(out, idleRuntime{
		name: rt.kind, image: rt.image, pid: rt.pid,
		// The agent never collects the suite's images here.
		flags: []string{"--container-runtime-endpoint", ctrd.Endpoint, "--image-gc-high-threshold", "100"},
	}), nil
}

// benchIdle is section 5: the real actorlet binary, as a process with its
// embedded NATS, idle with 0 and with e.idlePods running pods, on the
// embedded process runtime and on containerd.
func benchIdle(ctx context.Context, e *env) error {
	bin := filepath.Join(e.dir, "actorlet")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/actorlet")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build the actorlet binary (run from the repository root): %w\n%s", err, out)
	}
	rts, err := idleRuntimes(ctx, e)
	if err != nil {
		return err
	}
	t := newTable(fmt.Sprintf("Idle cost of the actorlet binary (embedded NATS), %s windows", e.window),
		"runtime", "running pods", "agent CPU (% core)", "agent RSS (MiB)", "runtime CPU (% core)")
	for i, rt := range rts {
		if err := idleOn(ctx, e, bin, fmt.Sprintf("bench-idle-%s-%d", e.run, i), rt, t); err != nil {
			return fmt.Errorf("%s: %w", rt.name, err)
		}
	}
	t.note("`actorlet --node-name <node> --root-dir <tmp> --nats-port <free> --healthz-port 0 --cgroups-per-qos=false [--container-runtime-endpoint <containerd> --image-gc-high-threshold 100]`: embedded NATS, defaults otherwise (relist 1 s, heartbeat 10 s, sync 1 min)")
	t.note("agent CPU: utime+stime of the agent process from /proc/<pid>/stat over the window; RSS: the largest VmRSS sampled each second; pods run `sleep 3600`")
	t.note("runtime CPU: the containerd process alone over the same window (not its shims); on the embedded process runtime it is inside the agent's figure")
	t.note("not counted: the per-container shim processes; both runtimes stream events, so the PLEG does not relist every second")
	e.report.emit(t)
	return nil
}

// idleOn runs the agent on one runtime and adds its two rows to t.
func idleOn(ctx context.Context, e *env, bin, node string, rt idleRuntime, t *table) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	root := filepath.Join(e.dir, node)
	logf, err := os.Create(filepath.Join(e.dir, node+".log"))
	if err != nil {
		return fmt.Errorf("create the agent's log: %w", err)
	}
	defer logf.Close()
	args := append([]string{"--node-name", node, "--root-dir", root, "--nats-port", strconv.Itoa(port), "--healthz-port", "0", "--cgroups-per-qos=false"}, rt.flags...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start actorlet: %w", err)
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	defer stopIdleAgent(cmd, root, rt.pid != "")

	// The embedded server is authenticated (docs/security.md): the agent
	// writes the admin's credentials under its root, as make run does.
	c, err := connectWithin(ctx, fmt.Sprintf("nats://127.0.0.1:%d", port), filepath.Join(root, "auth", "admin.creds"), 30*time.Second)
	if err != nil {
		return err
	}
	defer c.close()
	w, err := c.watchStatus(ctx, statusFilter(node, benchNamespace))
	if err != nil {
		return err
	}
	defer w.stop()

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
		var rtm *cpuMeter
		if rt.pid != "" {
			if rtm, err = startCPU(rt.pid); err != nil {
				return err
			}
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
		rtPct := "—"
		if rtm != nil {
			p, err := rtm.percent()
			if err != nil {
				return err
			}
			rtPct = fmt.Sprintf("%.2f", p)
		}
		t.add(rt.name, pods, fmt.Sprintf("%.2f", pct), fmt.Sprintf("%.1f", float64(rssMax)/(1<<20)), rtPct)
		return nil
	}
	if err := measure(0); err != nil {
		return err
	}
	values, err := podSpec{image: rt.image, command: []string{"sleep", "3600"}, run: e.run}.nodePods(node, "idle", e.idlePods)
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
	if err := c.purge(ctx, keysOf(values)); err != nil {
		return err
	}
	_ = waitFor(ctx, 2*time.Minute, "idle pods removed", func() bool {
		return w.count(func(p *podState) bool { return !p.removed.IsZero() }) >= e.idlePods
	})
	return nil
}

// stopIdleAgent stops the agent, then removes any container it left behind
// (SIGTERM leaves pods running by design): on the embedded runtime under
// root, on containerd the benchmark's namespace.
func stopIdleAgent(cmd *exec.Cmd, root string, containerd bool) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	if containerd {
		if rt, err := openContainerd(context.Background()); err == nil {
			rt.cleanUntilGone()
			rt.close()
		}
		return
	}
	// With the isolation the agent had ("auto": all of it as root), so
	// that Destroy removes the containers' cgroups too.
	if rt, err := procruntime.New(procruntime.Options{RootDir: filepath.Join(root, "runtime"), Isolation: procruntime.DefaultIsolation()}); err == nil {
		rt.Destroy()
	}
}
func connectWithin(ctx context.Context, url, creds string, timeout time.Duration) (*client, error) {
	deadline := time.Now().Add(timeout)
	for {
		c, err := dialBus(ctx, url, creds)
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
