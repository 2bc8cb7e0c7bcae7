package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/node/commands"
)

// cliNode is a commands.Node serving one pod, "web", with a real CRI log file.
type cliNode struct {
	logPath  string
	told     chan string
	noEvents bool // the node keeps no event history (as the agent)
}

func (n *cliNode) pod() *v1.Pod { return running(statusPod("default", "web", "u1", now)) }

func (n *cliNode) check(ns, name string) error {
	if ns != "default" || name != "web" {
		return wire.NotFound("pod %s/%s", ns, name)
	}
	return nil
}

func (n *cliNode) ListPods(context.Context) ([]*v1.Pod, error) { return []*v1.Pod{n.pod()}, nil }

func (n *cliNode) DescribePod(_ context.Context, ns, name string) (*wire.Description, error) {
	if err := n.check(ns, name); err != nil {
		return nil, err
	}
	var events []v1.Event
	if !n.noEvents {
		events = []v1.Event{{Type: "Warning", Reason: "BackOff", Message: "Back-off restarting failed container"}}
	}
	return &wire.Description{
		Pod:      n.pod(),
		Worker:   wire.PodWorker{Found: true, UID: "u1", WorkType: "terminating", PendingUpdate: "kill"},
		Probes:   []wire.ProbeWorker{{ContainerName: "app", Kind: "readiness", Result: "Failure", Failures: 2, Message: "HTTP 503"}},
		BackOffs: map[string]time.Time{"app": time.Now().Add(time.Hour)},
		Events:   events,
	}, nil
}

func (n *cliNode) LogPath(_ context.Context, ns, name, container string, previous bool) (string, error) {
	return n.logPath, n.check(ns, name)
}

func (n *cliNode) Exec(_ context.Context, ns, name, container string, cmd []string, _ time.Duration) ([]byte, []byte, int, error) {
	if err := n.check(ns, name); err != nil {
		return nil, nil, 0, err
	}
	return []byte(strings.Join(cmd, " ") + "\n"), []byte("warn\n"), 3, nil
}

func (n *cliNode) Restart(_ context.Context, ns, name, container string) error {
	n.told <- "restart " + container
	return n.check(ns, name)
}

func (n *cliNode) Evict(_ context.Context, ns, name string, grace *int64, reason string) error {
	n.told <- fmt.Sprintf("evict %d %s", *grace, reason)
	return n.check(ns, name)
}

func TestNodeCommands(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "0.log")
	if err := os.WriteFile(logPath, []byte("2025-06-01T11:59:00Z stdout F one\n2025-06-01T11:59:01Z stderr P tw\n2025-06-01T11:59:02Z stderr F o\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := &cliNode{logPath: logPath, told: make(chan string, 4)}
	svc, err := commands.StartService(e.conn.NC, n, commands.ServiceOptions{NodeName: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	// The pod's node is found from its status key.
	e.put(wire.StatusBucket, wire.StatusKey("n1", "default", "web"), n.pod())

	t.Run("logs", func(t *testing.T) {
		// --tail counts the file's lines, as the kubelet's: two is split
		// in two records.
		if out := e.mustRun("logs", "web", "--tail", "2", "--timestamps"); out != "2025-06-01T11:59:01Z two\n" {
			t.Fatalf("logs = %q", out)
		}
		if out := e.mustRun("logs", "web"); out != "one\ntwo\n" {
			t.Fatalf("logs = %q", out)
		}
	})
	t.Run("exec exits with the command's code", func(t *testing.T) {
		out, errOut, code := e.run(context.Background(), "", "exec", "web", "-c", "app", "--", "ls", "-l", "/")
		if code != 3 || out != "ls -l /\n" || errOut != "warn\n" {
			t.Fatalf("exec: exit %d stdout %q stderr %q", code, out, errOut)
		}
	})
	t.Run("describe", func(t *testing.T) {
		out := e.mustRun("describe", "pod", "web")
		for _, w := range []string{"Name:", "web", "Work Type:", "terminating", "Pending Update:", "kill", "readiness", "HTTP 503", "restart in", "BackOff", "Containers:", "Restart Count:"} {
			if !strings.Contains(out, w) {
				t.Errorf("describe lacks %q:\n%s", w, out)
			}
		}
	})
	t.Run("restart and evict", func(t *testing.T) {
		e.mustRun("restart", "web", "-c", "app")
		if got := <-n.told; got != "restart app" {
			t.Fatalf("node told %q", got)
		}
		e.mustRun("evict", "web", "--grace-period", "7", "--reason", "Maintenance")
		if got := <-n.told; got != "evict 7 Maintenance" {
			t.Fatalf("node told %q", got)
		}
	})
	t.Run("unknown pod", func(t *testing.T) {
		_, errOut, code := e.run(context.Background(), "", "logs", "nope")
		if code != 1 || !strings.Contains(errOut, "not found on any node") {
			t.Fatalf("exit %d stderr %q", code, errOut)
		}
	})
	t.Run("unreachable node", func(t *testing.T) {
		start := time.Now()
		_, errOut, code := e.run(context.Background(), "", "exec", "web", "--node", "ghost", "--", "true")
		if code != 1 || !strings.Contains(errOut, `node "ghost" is not reachable (no responders)`) || time.Since(start) > 2*time.Second {
			t.Fatalf("exit %d stderr %q after %s", code, errOut, time.Since(start))
		}
	})
}

// TestBinarySmoke builds the real binary and runs it as a process.
func TestBinarySmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	e := newEnv(t)
	bin := filepath.Join(t.TempDir(), "actorletctl")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	e.put(wire.NodesBucket, "n1", node("n1", time.Now(), v1.ConditionTrue))
	manifest := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(manifest, []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: app\n    image: busybox\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runBin := func(args ...string) (string, int) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(os.Environ(), "ACTORLET_NATS_URL="+e.url)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("run %v: %v", args, err)
		}
		return string(out), code
	}
	if out, code := runBin("get", "nodes"); code != 0 || !strings.Contains(out, "n1") || !strings.Contains(out, "Ready") {
		t.Fatalf("get nodes: exit %d\n%s", code, out)
	}
	if out, code := runBin("apply", "-f", manifest); code != 0 || !strings.Contains(out, "pod/web created") {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	if e.pod(wire.DesiredBucket, wire.DesiredNodeKey("n1", "default", "web")) == nil {
		t.Fatal("apply wrote nothing")
	}
	if out, code := runBin("frobnicate"); code != 2 || !strings.Contains(out, `unknown command "frobnicate"`) {
		t.Fatalf("unknown command: exit %d\n%s", code, out)
	}
	if out, code := runBin("help"); code != 0 || !strings.Contains(out, "Commands:") {
		t.Fatalf("help: exit %d\n%s", code, out)
	}
}

// A node that keeps no event history: describe reads the pod's events from
// the events stream, each event once.
func TestDescribeReadsEventsFromTheStream(t *testing.T) {
	e := newEnv(t)
	n := &cliNode{told: make(chan string, 4), noEvents: true}
	svc, err := commands.StartService(e.conn.NC, n, commands.ServiceOptions{NodeName: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	e.put(wire.StatusBucket, wire.StatusKey("n1", "default", "web"), n.pod())
	for _, count := range []int32{1, 2} { // a repeat, republished with a higher count
		ev := v1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "web.pulled", Namespace: "default"},
			InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"},
			Type:           v1.EventTypeNormal, Reason: "Pulled", Message: "pulled the image", Count: count,
			LastTimestamp: metav1.NewTime(now),
		}
		data, _ := json.Marshal(ev)
		if _, err := e.conn.JS.Publish(context.Background(), wire.EventSubject("n1", "default", "web"), data); err != nil {
			t.Fatal(err)
		}
	}
	out := e.mustRun("describe", "pod", "web")
	if strings.Count(out, "pulled the image") != 1 || strings.Contains(out, "Events:     <none>") {
		t.Fatalf("describe must list the stream's event once:\n%s", out)
	}
}
