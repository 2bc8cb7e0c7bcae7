package chaos

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// agentProc is one node: the real actorlet binary as its own process, on
// the embedded process runtime (its pods are real processes under shims
// that outlive the agent), with its own root directory and node
// credentials. Its log (-v=2) is appended to <root>/agent.log across
// restarts.
type agentProc struct {
	node string
	root string
	args []string

	// onExit is called when the agent exits by itself (not by Signal),
	// with its exit status and the last line it logged; the agent is then
	// started again after restartDelay, as systemd's Restart=always would.
	onExit func(node, status, lastLine string)

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	log    *os.File
	closed bool
}

// restartDelay is how long an agent that exited by itself stays down.
const restartDelay = time.Second

func newAgent(bin, node, root, url, creds, labels string) *agentProc {
	return &agentProc{node: node, root: root, args: []string{
		"--node-name", node, "--root-dir", root, "--nats-url", url, "--nats-creds", creds,
		"--node-labels", labels, "--healthz-port", "0", "--node-ip", "127.0.0.1",
		"--pod-manifest-path", "", "--relist-period", "1s", "-v", "2",
		// Five agents share this host: a QoS cgroup hierarchy is one
		// node's (each would sweep the others' pod cgroups as orphans).
		"--cgroups-per-qos=false",
	}, cmd: exec.Command(bin)}
}

func (a *agentProc) logPath() string { return filepath.Join(a.root, "agent.log") }

// Start starts the agent process (no-op while it runs).
func (a *agentProc) Start() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done != nil || a.closed {
		return nil
	}
	if a.log == nil {
		f, err := os.OpenFile(a.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		a.log = f
	}
	cmd := exec.Command(a.cmd.Path, a.args...)
	cmd.Stdout, cmd.Stderr = a.log, a.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start agent %s: %w", a.node, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
		a.mu.Lock()
		byItself := a.done == done && !a.closed // Signal clears done first
		if byItself {
			a.done = nil
		}
		a.mu.Unlock()
		if byItself {
			if a.onExit != nil {
				a.onExit(a.node, cmd.ProcessState.String(), lastLine(a.logPath()))
			}
			time.AfterFunc(restartDelay, func() { _ = a.Start() })
		}
	}()
	a.cmd, a.done = cmd, done
	return nil
}

// Signal sends sig and waits until the agent has exited (SIGKILL after
// 30 s).
func (a *agentProc) Signal(sig syscall.Signal) {
	a.mu.Lock()
	cmd, done := a.cmd, a.done
	a.done = nil
	a.mu.Unlock()
	if done == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func (a *agentProc) close() {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.Signal(syscall.SIGKILL)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.log != nil {
		a.log.Close()
		a.log = nil
	}
}

// sourceWords mark the log lines of the agent's bus connection and
// desired-pods watch, shown with every violation.
var sourceWords = []string{"Disconnected from NATS", "Reconnected to NATS", "Re-watch", "Watching desired pods failed",
	"Desired pods loaded", "stale", "Desired keys missing"}

// logLines is the last max lines of the agent's log logged between from
// and to that contain any of words.
func (a *agentProc) logLines(max int, from, to time.Time, words ...string) []string {
	f, err := os.Open(a.logPath())
	if err != nil {
		return []string{"(no log: " + err.Error() + ")"}
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if at, ok := klogTime(line, from); !ok || at.Before(from) || at.After(to) {
			continue
		}
		for _, w := range words {
			if strings.Contains(line, w) {
				out = append(out, line)
				break
			}
		}
	}
	if len(out) > max {
		out = out[len(out)-max:]
	}
	return out
}

// klogTime reads the time of a klog line ("I1126 17:40:57.592055 ..."),
// in near's year and location.
func klogTime(line string, near time.Time) (time.Time, bool) {
	if len(line) < 21 || !strings.ContainsRune("IWEF", rune(line[0])) {
		return time.Time{}, false
	}
	t, err := time.ParseInLocation("0102 15:04:05.000000", line[1:21], near.Location())
	if err != nil {
		return time.Time{}, false
	}
	return t.AddDate(near.Year(), 0, 0), true
}
