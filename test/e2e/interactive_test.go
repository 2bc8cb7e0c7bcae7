//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/test/cliproc"
)

// startCtl starts actorletctl on the agent's bus in the test namespace,
// with stdin (nil: none); with a terminal size it runs on a new
// pseudo-terminal instead, which the test drives.
func (a *agent) startCtl(t *testing.T, stdin io.Reader, size *pty.Winsize, args ...string) *cliproc.Proc {
	t.Helper()
	full := append(append(a.ctlBusArgs(), args[0], "-n", namespace), args[1:]...)
	return cliproc.Start(t, 60*time.Second, stdin, size, ctlBin, full...)
}

// sessions reads the agent's actorlet_interactive_sessions gauge.
func (a *agent) sessions() (string, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", a.healthzPort))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`(?m)^actorlet_interactive_sessions (\S+)$`).FindSubmatch(body)
	if m == nil {
		return "", errors.New("no actorlet_interactive_sessions in /metrics")
	}
	return string(m[1]), nil
}

// noSessions waits until the node holds no interactive session.
func (a *agent) noSessions(t *testing.T) {
	t.Helper()
	eventually(t, 60*time.Second, func() error {
		n, err := a.sessions()
		if err == nil && n != "0" {
			err = fmt.Errorf("the node holds %s interactive sessions", n)
		}
		return err
	})
}

// Scenario: exec -it through a real pseudo-terminal, exec -i, attach and
// port-forward against containerd's CRI streaming server.
func TestInteractiveSessions(t *testing.T) {
	a := startAgent(t, agentOptions{})
	shell := shPod("ishell", "while true; do echo tick; sleep 0.3; done")
	att := shPod("iattach", `echo ready; while read l; do echo "echo:$l"; done; echo bye; sleep 3600`)
	att.Spec.Containers[0].Stdin, att.Spec.Containers[0].StdinOnce = true, true
	tty := shPod("itty", "exec sh")
	tty.Spec.Containers[0].Stdin, tty.Spec.Containers[0].TTY = true, true
	web := shPod("ihttp", "mkdir -p /www && echo hello-from-the-pod > /www/index.html && exec httpd -f -p 8080 -h /www")
	web.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 8080}}
	a.apply(t, shell, att, tty, web)
	for _, p := range []string{"ishell", "iattach", "itty", "ihttp"} {
		a.waitPod(t, p, 2*time.Minute, isRunning)
	}

	t.Run("exec -it on a pty", func(t *testing.T) { cliproc.Shell(t, a.startCtl, "ishell") })

	t.Run("exec -i", func(t *testing.T) { cliproc.ExecStdin(t, a.startCtl, "ishell") })

	t.Run("closed client", func(t *testing.T) {
		cliproc.ClosedClient(t, a.startCtl, "ishell", "sleep 1717")
		// The node closed the session and the runtime's stream at once.
		a.noSessions(t)
		// containerd does not end an exec whose stream closed (CRI has no
		// call to; kubectl leaves it too: kubernetes/kubernetes#89031,
		// kubernetes/kubectl#1076): report, do not fail. The pod's
		// deletion ends it.
		time.Sleep(2 * time.Second) // an observation for the log, not an assertion
		if pids := cliproc.HostProcesses("sleep 1717"); len(pids) > 0 {
			t.Logf("containerd keeps the exec'd command after its stream closed (as with kubectl): %v", pids)
		}
	})

	t.Run("attach", func(t *testing.T) { cliproc.Attach(t, a.startCtl, "ishell", "iattach") })

	t.Run("attach -it on a pty", func(t *testing.T) { cliproc.AttachOnPty(t, a.startCtl, "itty") })

	t.Run("port-forward", func(t *testing.T) {
		p := a.startCtl(t, nil, nil, "port-forward", "ihttp", ":8080")
		re := regexp.MustCompile(`Forwarding from (127\.0\.0\.1:\d+) -> 8080`)
		var local string
		eventually(t, 30*time.Second, func() error {
			m := re.FindStringSubmatch(p.Out.String())
			if m == nil {
				return fmt.Errorf("no forwarding line: %q %q", p.Out.String(), p.Err.String())
			}
			local = m[1]
			return nil
		})
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		for i := range 3 {
			eventually(t, 30*time.Second, func() error {
				resp, err := client.Get("http://" + local + "/index.html")
				if err != nil {
					return fmt.Errorf("GET %d: %w", i, err)
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != 200 || string(body) != "hello-from-the-pod\n" {
					return fmt.Errorf("GET %d: %s %q", i, resp.Status, body)
				}
				return nil
			})
		}
		_ = p.Cmd.Process.Signal(syscall.SIGINT)
		if code := p.Wait(t); code != 0 {
			t.Errorf("port-forward exited %d; stderr %q", code, p.Err.String())
		}
	})
	a.noSessions(t) // nothing leaked
}
