//go:build e2e

package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// natsServer is a real nats-server process with JetStream and a store dir
// that survives its restarts.
type natsServer struct {
	port     int
	storeDir string
	logPath  string
	cmd      *exec.Cmd
	done     chan struct{}
}

func startNATSServer(t *testing.T) *natsServer {
	t.Helper()
	dir := t.TempDir()
	s := &natsServer{port: freePort(t), storeDir: filepath.Join(dir, "js"), logPath: filepath.Join(dir, "nats.log")}
	s.start(t)
	t.Cleanup(func() {
		s.stop(t)
		if t.Failed() {
			if b, err := os.ReadFile(s.logPath); err == nil {
				t.Logf("nats-server log:\n%s", b)
			}
		}
	})
	return s
}

func (s *natsServer) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", s.port) }

func (s *natsServer) start(t *testing.T) {
	t.Helper()
	s.cmd = exec.Command(natsServerBin, "-a", "127.0.0.1", "-p", strconv.Itoa(s.port), "-js", "-sd", s.storeDir, "-l", s.logPath)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start nats-server: %v", err)
	}
	s.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { cmd.Wait(); close(done) }(s.cmd, s.done)
	eventually(t, 10*time.Second, func() error {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.port), time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	})
}

func (s *natsServer) stop(t *testing.T) {
	if s.cmd == nil {
		return
	}
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// Scenario 9: the NATS server is restarted under a running agent: the agent
// reconnects, a pod written right after the restart is not lost, and status
// updates resume.
func TestNATSServerRestart(t *testing.T) {
	srv := startNATSServer(t)
	a := startAgent(t, agentOptions{natsURL: srv.url()})
	a.apply(t, shPod("before", "sleep 3600"))
	before := a.waitPod(t, "before", 60*time.Second, isRunning)

	srv.stop(t)
	srv.start(t)
	// Written at once, possibly before the agent is back.
	a.apply(t, shPod("after", "echo after; sleep 3600"))

	a.waitPod(t, "after", 90*time.Second, isRunning)
	eventually(t, 30*time.Second, func() error { return a.healthz() })
	// Statuses resume for the pod that ran all along: a restart through the
	// bus shows up in its status.
	a.mustCtl(t, "restart", "before", "-n", namespace)
	p := a.waitPod(t, "before", 60*time.Second, func(p *v1.Pod) error {
		if containerStatus(p, "main").RestartCount != 1 {
			return fmt.Errorf("restart not reported")
		}
		return isRunning(p)
	})
	if containerStatus(p, "main").ContainerID == containerStatus(before, "main").ContainerID {
		t.Errorf("before: container ID unchanged after a restart")
	}
	if st, msg := a.nodeCondition(t, v1.NodeReady); st != v1.ConditionTrue {
		t.Errorf("node Ready %s (%s) after the bus restart, want True", st, msg)
	}
}
