package fleet

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/actorlet/actorlet/node/agent"
	"github.com/actorlet/actorlet/test/cliproc"
)

// quickStartCommands extracts the commands of README.md's quick start: the
// lines of the sh block between <!-- quickstart:begin --> and
// <!-- quickstart:end -->, without their trailing comments.
func quickStartCommands(t *testing.T) []string {
	t.Helper()
	readme := readFile(t, filepath.Join(examplesDir(t), "..", "README.md"))
	_, block, ok := strings.Cut(readme, "<!-- quickstart:begin -->")
	block, _, ok2 := strings.Cut(block, "<!-- quickstart:end -->")
	if !ok || !ok2 {
		t.Fatal("README.md has no <!-- quickstart:begin --> ... <!-- quickstart:end --> block")
	}
	var cmds []string
	for _, l := range strings.Split(block, "\n") {
		if strings.HasPrefix(l, "```") {
			continue
		}
		if i := strings.Index(l, " #"); i >= 0 {
			l = l[:i]
		}
		if l = strings.TrimSpace(l); l != "" {
			cmds = append(cmds, l)
		}
	}
	if len(cmds) < 10 {
		t.Fatalf("the quick start block has %d commands: %q", len(cmds), cmds)
	}
	return cmds
}

// TestQuickStart runs the README's quick start as written, line by line,
// against a real node on embedded defaults (embedded NATS, the process
// runtime, state in ./.actorlet of the directory the commands run in, as
// make run), so the README cannot drift from what the tools do. Only
// what must differ on a shared test machine is substituted: the binary
// path, the bus URL (a free port, not 4222), and the two HTTP ports
// (free ones: pods share the host's network). Commands that run until
// stopped are driven as a person would: exec -it gets a shell command and
// exit, attach and port-forward are checked and stopped with Ctrl-C.
func TestQuickStart(t *testing.T) {
	host, err := os.Hostname()
	if err != nil || host != strings.ToLower(host) {
		t.Skipf("the quick start names the static pod hello-$(hostname); this host's name %q (%v) is not a lower-case node name", host, err)
	}
	if _, err := exec.LookPath("busybox"); err != nil {
		t.Skipf("the quick start's examples/http-server.yaml runs busybox httpd on the host, and this host has no busybox (apt-get install busybox-static; .ci/run installs it): %v", err)
	}
	cmds := quickStartCommands(t)
	f := newFleet(t) // only for the harness: the node below runs its own server
	cwd := t.TempDir()
	root := filepath.Join(cwd, ".actorlet")
	serverPort, localPort := freePort(t), freePort(t)
	// examples/, with the HTTP server on a free port.
	if err := os.Mkdir(filepath.Join(cwd, "examples"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := examplesDir(t)
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() { // examples/volumes: not in the quick start
			continue
		}
		data := readFile(t, filepath.Join(src, e.Name()))
		if e.Name() == "http-server.yaml" {
			data = strings.ReplaceAll(data, "8080", strconv.Itoa(serverPort))
		}
		if err := os.WriteFile(filepath.Join(cwd, "examples", e.Name()), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n := f.startNode(t, host, nil, func(c *agent.Config) {
		c.RootDir = root
		c.PodManifestPath = filepath.Join(root, "manifests")
		c.NATS = agent.NATSConfig{Host: "127.0.0.1", Port: -1}
	})
	n.mu.Lock()
	url := n.agent.BusURL()
	n.mu.Unlock()
	if err := os.MkdirAll(filepath.Join(root, "manifests"), 0o755); err != nil {
		t.Fatal(err)
	}

	start := func(line string, size *pty.Winsize) *cliproc.Proc {
		line = strings.ReplaceAll(line, "bin/actorletctl", ctlBinary)
		line = strings.ReplaceAll(line, "9090", strconv.Itoa(localPort))
		line = strings.ReplaceAll(line, "8080", strconv.Itoa(serverPort))
		script := fmt.Sprintf("export ACTORLET_NATS_URL=%s ACTORLET_CREDS=; cd %s && exec %s", url, cwd, line)
		return cliproc.Start(t, 90*time.Second, nil, size, "sh", "-c", script)
	}
	for _, line := range cmds {
		t.Logf("$ %s", line)
		switch {
		case strings.Contains(line, " exec -it "):
			p := start(line, &pty.Winsize{Rows: 24, Cols: 80})
			p.Write(t, "echo quick-$((6*7))\r")
			p.WaitOut(t, "quick-42")
			p.Write(t, "exit\r")
			if code := p.Wait(t); code != 0 {
				t.Fatalf("%s: exit %d\n%s", line, code, p.Out.String())
			}
		case strings.Contains(line, " attach "):
			p := start(line, nil)
			p.WaitOut(t, "hello ")
			_ = p.Cmd.Process.Signal(syscall.SIGINT)
			if code := p.Wait(t); code != 130 { // as kubectl attach: ended by SIGINT
				t.Fatalf("%s: exit %d after Ctrl-C, want 130\n%s\n%s", line, code, p.Out.String(), p.Err.String())
			}
		case strings.Contains(line, " port-forward "):
			p := start(line, nil)
			if body := forwardGet(t, p, serverPort); body != "hello from http-server\n" {
				t.Fatalf("%s: GET localhost:%d answered %q", line, localPort, body)
			}
		default:
			p := start(line, nil)
			if code := p.Wait(t); code != 0 {
				t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", line, code, p.Out.String(), p.Err.String())
			}
			t.Logf("%s%s", p.Out.String(), p.Err.String())
		}
	}
	// The quick start cleans up after itself: no pod is left.
	p := start("bin/actorletctl get pods -A", nil)
	if code := p.Wait(t); code != 0 || strings.TrimSpace(p.Out.String()) != "" || !strings.Contains(p.Err.String(), "No resources found") {
		t.Errorf("after the quick start: exit %d\n%s\n%s", code, p.Out.String(), p.Err.String())
	}
}
