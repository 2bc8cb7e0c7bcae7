// Package agentcrash kills the real agent (a separate process on the
// embedded process runtime) at random instants while it creates pods, and
// counts the real processes: never more than one per container, and none
// left once the pods are deleted.
package agentcrash

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/cri/procruntime"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/node/agent"
	"github.com/actorlet/actorlet/test/testenv"
	"github.com/actorlet/actorlet/test/testutil"
)

// agentArgsEnv makes the test binary, re-executed, the agent: its value is
// the agent's command line as a JSON array. The binary is also the shim of
// the agent's process runtime (MaybeRunShim), exactly as the actorlet
// binary is.
const agentArgsEnv = "ACTORLET_TEST_AGENT_ARGS"

func TestMain(m *testing.M) {
	procruntime.MaybeRunShim()
	if args := os.Getenv(agentArgsEnv); args != "" {
		os.Exit(runAgent(args))
	}
	testutil.Main(m, "")
}

// runAgent is the agent's main, as cmd/actorlet runs it.
func runAgent(argsJSON string) int {
	var args []string
	if err := json.Unmarshal([]byte(argsJSON), &args); err != nil {
		fmt.Fprintln(os.Stderr, "agent args:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	cfg, err := agent.ParseFlags(args)
	if err == nil {
		err = agent.Run(ctx, cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "actorlet:", err)
		return 1
	}
	return 0
}

const (
	node       = "crash-n1"
	pods       = 20 // one-container pods of each generation
	bigPodSize = 50 // containers of one more pod, started in parallel
	iterations = 6
)

// TestAgentKilledDuringCreationRunsEachContainerOnce: one pod of 50
// containers and, in each of 6 iterations, a new generation of 20
// one-container pods are desired (the previous generation's keys deleted);
// the agent is started on the same root directory and killed (SIGKILL) at a
// random instant while it creates them. After every kill each container
// has at most one process; at the end a last agent runs every desired
// container exactly once, and no process of a deleted pod is left.
// Deleting every key then leaves no container process and no shim.
//
// Before starts were durable, containers launched just before a kill came
// back CREATED and got a second process (1–12 per run).
func TestAgentKilledDuringCreationRunsEachContainerOnce(t *testing.T) {
	srv := bustest.StartServer(t, bustest.ServerOptions{})
	conn := bustest.ConnectWithProtocol(t, srv)
	root, err := os.MkdirTemp("", "ac") // unix socket paths must stay short
	if err != nil {
		t.Fatal(err)
	}
	marker := fmt.Sprintf("agentcrash-%d", time.Now().UnixNano())
	shimEnv := "ACTORLET_PROCRUNTIME_SHIM=" + root
	var a *agentProc
	t.Cleanup(func() {
		// Whatever the outcome, nothing this test started survives it.
		if a != nil {
			a.kill()
		}
		testutil.KillAll(testutil.ProcsWithEnvPrefix(shimEnv))
		testutil.KillAll(testutil.ProcsWritingUnder(root)) // the sandbox holders
		testutil.KillAll(testutil.ProcsWithArgPrefix(marker))
		testenv.RemoveContainerCgroups(t, filepath.Join(root, "runtime"))
		if !t.Failed() {
			_ = os.RemoveAll(root)
		} else {
			t.Logf("agent state and log kept in %s", root)
		}
	})
	args := []string{
		"--node-name", node, "--root-dir", root, "--nats-url", srv.ClientURL(),
		"--healthz-port", "0", "--node-ip", "127.0.0.1", "--pod-manifest-path", "",
		"--relist-period", "500ms", "-v", "2", "--cgroups-per-qos=false",
	}

	// The desired pods, written once before the first start.
	kv, err := conn.JS.KeyValue(context.Background(), wire.DesiredBucket)
	if err != nil {
		t.Fatal(err)
	}
	containers := map[string]string{} // marker argument of every container → its pod
	desired := map[string]bool{}      // pods desired now
	put := func(name string, n int) {
		pod := v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
		grace := int64(2)
		pod.Spec.TerminationGracePeriodSeconds = &grace
		for i := 0; i < n; i++ {
			arg := fmt.Sprintf("%s-%s-%d", marker, name, i)
			containers[arg] = name
			pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{
				Name:    fmt.Sprintf("c%d", i),
				Image:   "busybox:1.36",
				Command: []string{"sh", "-c", `trap "exit 0" TERM; while true; do sleep 1; done`, arg},
			})
		}
		b, err := json.Marshal(pod)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Put(context.Background(), wire.DesiredNodeKey(node, "default", name), b); err != nil {
			t.Fatal(err)
		}
		desired[name] = true
	}
	del := func(name string) {
		if err := kv.Delete(context.Background(), wire.DesiredNodeKey(node, "default", name)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			t.Fatal(err)
		}
		delete(desired, name)
	}

	// atMostOnce checks the invariant on the real processes and returns how
	// many containers of desired pods have their process.
	atMostOnce := func(when string) (running int) {
		t.Helper()
		count := map[string]int{}
		// Group leaders only: the shell's forks (for each sleep) show the
		// same arguments for an instant.
		for _, p := range testutil.Leaders(testutil.ProcsWithArgPrefix(marker)) {
			count[p.Args[len(p.Args)-1]]++
		}
		for arg, n := range count {
			if containers[arg] == "" {
				t.Errorf("%s: unknown process argument %q", when, arg)
			}
			if n > 1 {
				t.Errorf("%s: container %s has %d processes, want at most 1", when, arg, n)
			}
			if desired[containers[arg]] {
				running++
			}
		}
		return running
	}
	wantRunning := func() (n int) {
		for _, pod := range containers {
			if desired[pod] {
				n++
			}
		}
		return n
	}

	// Each iteration: a new generation of pods is desired and the previous
	// one deleted (the big pod stays), the agent starts and is killed at a
	// random instant while it creates (and deletes) them.
	rnd := rand.New(rand.NewSource(time.Now().UnixNano()))
	put("big", bigPodSize)
	for it := 0; it < iterations; it++ {
		for i := 0; i < pods; i++ {
			if it > 0 {
				del(fmt.Sprintf("g%d-p%02d", it-1, i))
			}
			put(fmt.Sprintf("g%d-p%02d", it, i), 1)
		}
		a = startAgent(t, root, args, it)
		delay := 100*time.Millisecond + time.Duration(rnd.Int63n(int64(1200*time.Millisecond)))
		time.Sleep(delay)
		a.kill()
		a = nil
		n := atMostOnce(fmt.Sprintf("after kill %d", it))
		t.Logf("iteration %d: agent killed after %s; %d of %d desired containers have their process", it, delay, n, wantRunning())
		if t.Failed() {
			return
		}
	}

	// A last agent, left alone, runs everything: exactly one process each,
	// and every pod Running.
	a = startAgent(t, root, args, iterations)
	status, err := conn.JS.KeyValue(context.Background(), wire.StatusBucket)
	if err != nil {
		t.Fatal(err)
	}
	testutil.EventuallyEvery(t, 90*time.Second, 250*time.Millisecond, func() error {
		if n, want := atMostOnce("while converging"), wantRunning(); n != want {
			return fmt.Errorf("%d of %d desired containers have their process", n, want)
		}
		if ps := testutil.Leaders(testutil.ProcsWithArgPrefix(marker)); len(ps) != wantRunning() {
			return fmt.Errorf("%d container processes run, want %d: deleted pods' processes remain", len(ps), wantRunning())
		}
		for name := range desired {
			e, err := status.Get(context.Background(), wire.StatusKey(node, "default", name))
			if err != nil {
				return fmt.Errorf("status of %s: %w", name, err)
			}
			var p v1.Pod
			if err := json.Unmarshal(e.Value(), &p); err != nil {
				return err
			}
			if p.Status.Phase != v1.PodRunning {
				return fmt.Errorf("pod %s is %s", name, p.Status.Phase)
			}
		}
		return nil
	})
	if t.Failed() {
		return
	}

	// Delete every key: no container process and no shim may remain.
	keys, err := kv.ListKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for k := range keys.Keys() {
		if err := kv.Delete(context.Background(), k); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			t.Fatal(err)
		}
	}
	testutil.EventuallyEvery(t, 60*time.Second, 250*time.Millisecond, func() error {
		if ps := testutil.ProcsWithArgPrefix(marker); len(ps) != 0 {
			return fmt.Errorf("%d container processes left after every key was deleted", len(ps))
		}
		if ps := testutil.ProcsWithEnvPrefix(shimEnv); len(ps) != 0 {
			return fmt.Errorf("%d shims left after every key was deleted", len(ps))
		}
		return nil
	})
	a.stop(t)
	a = nil
}

// agentProc is the agent running as a separate process.
type agentProc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func startAgent(t *testing.T, root string, args []string, n int) *agentProc {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	log, err := os.OpenFile(filepath.Join(root, fmt.Sprintf("agent-%d.log", n)), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), agentArgsEnv+"="+string(b))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a := &agentProc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(a.done) }()
	return a
}

// kill kills the agent (SIGKILL) and reaps it.
func (a *agentProc) kill() {
	_ = a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.done
}

// stop stops the agent with SIGTERM (pods keep running), as an operator.
func (a *agentProc) stop(t *testing.T) {
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(30 * time.Second):
		t.Errorf("agent did not stop within 30 s of SIGTERM")
		a.kill()
	}
	if code := a.cmd.ProcessState.ExitCode(); code != 0 && !t.Failed() {
		t.Errorf("agent exited %d after SIGTERM", code)
	}
}
