package fleet

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/test/cliproc"
	"github.com/actorlet/actorlet/test/testutil"
)

// examplesDir is the repository's examples/ directory.
func examplesDir(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "examples")
}

// testExamples applies the real-world manifests of examples/ unchanged to
// a live node on the process runtime and checks that each runs as it
// says: the web app Ready with env from its ConfigMap and Secret, the log
// shipper sidecar started first and shipping the app's log, the job
// Completed when apply --wait returns (its comment says so), the HTTP
// server Ready and answering through port-forward. Only the HTTP server's
// port is changed (to a free one): pods share the host's network, and
// other tests run beside this one.
func testExamples(t *testing.T, f *fleet) {
	n := f.startNode(t, "ex-n1", map[string]string{"role": "examples"}, nil)
	dir := examplesDir(t)
	for _, file := range []string{"web-app.yaml", "sidecar-log-shipper.yaml", "hello.yaml"} {
		f.mustCtl(t, "apply", "-f", filepath.Join(dir, file), "--node", n.name)
	}
	// job.yaml: "apply --wait" returns once the run-once pod Completed.
	out := f.mustCtl(t, "apply", "-f", filepath.Join(dir, "job.yaml"), "--node", n.name, "--wait", "--wait-timeout", "40s")
	if !strings.Contains(out, "pod/report: Completed on ex-n1 - completed") {
		t.Errorf("apply --wait of the job did not wait for Completed:\n%s", out)
	}
	if table := f.mustCtl(t, "get", "pods", "report", "--node", n.name); !lineHas(table, "report", "0/1", "Completed") {
		t.Errorf("after apply --wait the job is not 0/1 Completed:\n%s", table)
	}
	if _, err := exec.LookPath("busybox"); err != nil {
		t.Logf("SKIP examples/http-server.yaml: it runs busybox httpd on the host, and this host has no busybox (apt-get install busybox-static; .ci/run installs it): %v", err)
	} else {
		port := freePort(t)
		server := strings.ReplaceAll(readFile(t, filepath.Join(dir, "http-server.yaml")), "8080", strconv.Itoa(port))
		out := f.mustCtl(t, "apply", "-f", testutil.WriteFile(t, t.TempDir(), "http-server.yaml", server), "--node", n.name, "--wait", "--wait-timeout", "40s")
		if !strings.Contains(out, "pod/http-server: Running on ex-n1 - ready") {
			t.Errorf("apply --wait of the HTTP server did not wait for Ready:\n%s", out)
		}
		if body := f.forwardGet(t, "http-server", port); body != "hello from http-server\n" {
			t.Errorf("GET through port-forward: %q", body)
		}
		// Gracefully: the server removes the directory it served from.
		f.mustCtl(t, "delete", "pod", "http-server", "--node", n.name, "--wait", "--wait-timeout", "40s")
	}

	f.waitPod(t, n.name, "default", "web", "ready", func(p *v1.Pod) bool {
		return isRunning(p) && p.Status.ContainerStatuses[0].Ready
	})
	eventually(t, waitFor, func() error {
		if out := f.mustCtl(t, "logs", "web", "--node", n.name); !strings.Contains(out, "starting on port 8080 as web: hello from actorlet") {
			return fmt.Errorf("web log: %q", out)
		}
		return nil
	})

	f.waitPod(t, n.name, "default", "log-shipper", "running with its sidecar started", func(p *v1.Pod) bool {
		if !isRunning(p) || len(p.Status.InitContainerStatuses) != 1 {
			return false
		}
		s := p.Status.InitContainerStatuses[0]
		return s.State.Running != nil && s.Started != nil && *s.Started
	})
	eventually(t, waitFor, func() error {
		if out := f.mustCtl(t, "logs", "log-shipper", "-c", "shipper", "--node", n.name); !strings.Contains(out, "request ") {
			return fmt.Errorf("shipper log: %q", out)
		}
		return nil
	})

	job := f.waitPod(t, n.name, "default", "report", "Succeeded", func(p *v1.Pod) bool { return p != nil && p.Status.Phase == v1.PodSucceeded })
	if cs := job.Status.InitContainerStatuses; len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.ExitCode != 0 {
		t.Errorf("init container: %+v", cs)
	}
	f.waitRunning(t, n.name, "default", "hello")

	for _, p := range []string{"web", "log-shipper", "report", "hello"} {
		f.ctl(t, "delete", "pod", p, "--node", n.name, "--now")
	}
}

// readFile is a file's content.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// freePort is a loopback TCP port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// forwardGet runs port-forward POD :remote, GETs / through it and returns
// the body; the port-forward is stopped with Ctrl-C and must exit 0.
func (f *fleet) forwardGet(t *testing.T, pod string, remote int) string {
	t.Helper()
	p := f.startCtl(t, nil, nil, "port-forward", pod, ":"+strconv.Itoa(remote))
	return forwardGet(t, p, remote)
}

// forwardedAddr waits for the running port-forward p to print its
// "Forwarding from" line (to the remote port, any when "") and returns the
// local address it listens on.
func forwardedAddr(t *testing.T, p *cliproc.Proc, remote string) string {
	t.Helper()
	re := regexp.MustCompile(`Forwarding from (127\.0\.0\.1:\d+) -> ` + regexp.QuoteMeta(remote))
	var local string
	eventually(t, waitFor, func() error {
		m := re.FindStringSubmatch(p.Out.String())
		if m == nil {
			return fmt.Errorf("no forwarding line yet: %q %q", p.Out.String(), p.Err.String())
		}
		local = m[1]
		return nil
	})
	return local
}

// forwardGet GETs / through the running port-forward p to remote.
func forwardGet(t *testing.T, p *cliproc.Proc, remote int) string {
	t.Helper()
	local := forwardedAddr(t, p, strconv.Itoa(remote))
	var body string
	eventually(t, waitFor, func() error {
		c := http.Client{Timeout: 10 * time.Second}
		resp, err := c.Get("http://" + local + "/")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s %q %v", local, resp.Status, b, err)
		}
		body = string(b)
		return nil
	})
	_ = p.Cmd.Process.Signal(syscall.SIGINT)
	if code := p.Wait(t); code != 0 {
		t.Errorf("port-forward exited %d after Ctrl-C; stderr %q", code, p.Err.String())
	}
	return body
}
