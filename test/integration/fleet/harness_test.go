package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/bus"
	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/cri/procruntime"
	"github.com/actorlet/actorlet/cri/procruntime/proctest"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/node/agent"
	"github.com/actorlet/actorlet/test/testenv"
	"github.com/actorlet/actorlet/test/testutil"
)

// waitFor is how long a test waits for an outcome that normally takes a
// second or two: generous, because two cores are shared by everything.
const waitFor = 45 * time.Second

// fleet is the shared bus every scenario runs on: one nats-server secured
// as docs/security.md says (operator JWTs), an operator's connection with
// the protocol's buckets, and agents that run with node credentials only.
type fleet struct {
	srv  *bustest.Server
	conn *bus.Conn
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	srv := bustest.StartServer(t, bustest.ServerOptions{Secure: true})
	return &fleet{srv: srv, conn: bustest.ConnectWithProtocol(t, srv)}
}

func (f *fleet) url() string { return f.srv.ClientURL() }

// node is one agent with its own process runtime and root directory. The
// runtime outlives agent restarts, as containerd outlives a kubelet's.
type node struct {
	t    *testing.T
	name string
	cfg  agent.Config
	rt   *procruntime.Runtime
	cri  *cri.Client
	// runtimeDir is the process runtime's root directory.
	runtimeDir string

	mu    sync.Mutex
	agent *agent.Agent
}

// startNode starts a process runtime and an agent for name; mod may adjust
// the configuration. Everything is stopped and removed by t.Cleanup.
func (f *fleet) startNode(t *testing.T, name string, labels map[string]string, mod func(*agent.Config)) *node {
	t.Helper()
	return f.startNodeOn(t, name, labels, mod, false)
}

// startNodeOn is startNode, on a runtime with every isolation the machine
// allows and filesystem views when isolated (the test is skipped without
// them: root).
func (f *fleet) startNodeOn(t *testing.T, name string, labels map[string]string, mod func(*agent.Config), isolated bool) *node {
	t.Helper()
	root := t.TempDir()
	agentRoot := filepath.Join(root, "agent")
	var rt *procruntime.Runtime
	var client *cri.Client
	if isolated {
		rt, client = proctest.StartIsolated(t, filepath.Join(root, "runtime"), agentRoot)
	} else {
		rt, client = testenv.Runtime(t, filepath.Join(root, "runtime"))
	}
	cfg := testenv.AgentConfig(t, name, f.url(), client)
	cfg.NodeLabels = labels
	cfg.RootDir = agentRoot
	cfg.RelistPeriod = 500 * time.Millisecond
	cfg.NATS.CredsFile = f.srv.NodeCreds(t, name) // the agent runs with node credentials only
	if mod != nil {
		mod(&cfg)
	}
	n := &node{t: t, name: name, cfg: cfg, rt: rt, cri: client, runtimeDir: filepath.Join(root, "runtime")}
	t.Cleanup(n.stop) // registered last: runs before the runtime goes
	n.start()
	return n
}

// start starts the agent (again, after stop) with the same configuration:
// same root directory, runtime and bus.
func (n *node) start() {
	n.t.Helper()
	a := testenv.StartAgent(n.t, n.cfg)
	n.mu.Lock()
	n.agent = a
	n.mu.Unlock()
}

// stop stops the agent; its pods keep running in the runtime.
func (n *node) stop() {
	n.mu.Lock()
	a := n.agent
	n.agent = nil
	n.mu.Unlock()
	if a != nil {
		a.Stop()
	}
}

// sandboxes lists the runtime's sandboxes of a pod (any state).
func (n *node) sandboxes(ns, name string) []*runtimeapi.PodSandbox {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	all, err := n.cri.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{
		"io.kubernetes.pod.name": name, "io.kubernetes.pod.namespace": ns,
	}})
	if err != nil {
		n.t.Fatalf("list sandboxes of %s: %v", n.name, err)
	}
	return all
}

// runningContainers lists the runtime's running containers of a pod.
func (n *node) runningContainers(ns, name string) []*runtimeapi.Container {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	all, err := n.cri.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{
			"io.kubernetes.pod.name": name, "io.kubernetes.pod.namespace": ns,
		},
	})
	if err != nil {
		n.t.Fatalf("list containers of %s: %v", n.name, err)
	}
	return all
}

// ctlResult is one run of the actorletctl binary.
type ctlResult struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

func (r ctlResult) String() string {
	return fmt.Sprintf("exit %d after %s\nstdout:\n%s\nstderr:\n%s", r.code, r.took.Round(time.Millisecond), r.stdout, r.stderr)
}

// ctl runs the actorletctl binary against the fleet's server.
func (f *fleet) ctl(t *testing.T, args ...string) ctlResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, ctlBinary, append([]string{"--server", f.url(), "--creds", f.srv.AdminCreds(), "--timeout", "10s"}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	r := ctlResult{stdout: out.String(), stderr: errOut.String(), took: time.Since(start)}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		r.code = exitErr.ExitCode()
	default:
		t.Fatalf("run actorletctl %v: %v", args, err)
	}
	return r
}

// mustCtl runs actorletctl and fails the test unless it exits 0.
func (f *fleet) mustCtl(t *testing.T, args ...string) string {
	t.Helper()
	r := f.ctl(t, args...)
	if r.code != 0 {
		t.Fatalf("actorletctl %s: %s", strings.Join(args, " "), r)
	}
	return r.stdout
}

// podList runs `get pods -o json` with extra arguments and decodes the list.
func (f *fleet) podList(t *testing.T, args ...string) []v1.Pod {
	t.Helper()
	out := f.mustCtl(t, append([]string{"get", "pods", "-o", "json"}, args...)...)
	var list struct {
		Items []v1.Pod `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("decode get pods -o json: %v\n%s", err, out)
	}
	return list.Items
}

// getPod is one pod from `get pods --node node -o json`; nil when absent.
func (f *fleet) getPod(t *testing.T, nodeName, ns, name string) *v1.Pod {
	t.Helper()
	for _, p := range f.podList(t, "--node", nodeName, "-n", ns) {
		if p.Name == name {
			return &p
		}
	}
	return nil
}

// waitPod polls the pod's status through actorletctl until cond holds.
func (f *fleet) waitPod(t *testing.T, nodeName, ns, name string, what string, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	var got *v1.Pod
	eventually(t, waitFor, func() error {
		got = f.getPod(t, nodeName, ns, name)
		if !cond(got) {
			return fmt.Errorf("pod %s/%s on %s is not %s: %s", ns, name, nodeName, what, testutil.PodSummary(got))
		}
		return nil
	})
	return got
}

// waitRunning waits until the pod is Running with every container running
// and returns it.
func (f *fleet) waitRunning(t *testing.T, nodeName, ns, name string) *v1.Pod {
	t.Helper()
	return f.waitPod(t, nodeName, ns, name, "running", isRunning)
}

// waitGone waits until the pod has no status entry.
func (f *fleet) waitGone(t *testing.T, nodeName, ns, name string) {
	t.Helper()
	f.waitPod(t, nodeName, ns, name, "gone", func(p *v1.Pod) bool { return p == nil })
}

func isRunning(p *v1.Pod) bool {
	if p == nil || p.Status.Phase != v1.PodRunning || p.DeletionTimestamp != nil ||
		len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil || cs.ContainerID == "" {
			return false
		}
	}
	return true
}

// containerID is the ID of the pod's container name in its status.
func containerID(t *testing.T, p *v1.Pod, name string) string {
	t.Helper()
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == name {
			return cs.ContainerID
		}
	}
	t.Fatalf("pod %s has no status for container %s: %s", p.Name, name, testutil.PodSummary(p))
	return ""
}

// desired is the desired-pods bucket, for raw writes and checks.
func (f *fleet) desired(t *testing.T) jetstream.KeyValue {
	t.Helper()
	kv, err := f.conn.JS.KeyValue(context.Background(), wire.DesiredBucket)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// hasKey reports whether the desired bucket holds key.
func (f *fleet) hasKey(t *testing.T, key string) bool {
	t.Helper()
	_, err := f.desired(t).Get(context.Background(), key)
	switch {
	case err == nil:
		return true
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return false
	}
	t.Fatalf("read %s: %v", key, err)
	return false
}

// podYAML is a one-container pod running a shell script on the host.
func podYAML(name, script string, extra ...string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: busybox:1.36
    command: ["sh", "-c", %q]
%s`, name, script, strings.Join(extra, "\n"))
}

// eventually polls cond until it returns nil or timeout passes.
func eventually(t *testing.T, timeout time.Duration, cond func() error) {
	t.Helper()
	testutil.EventuallyEvery(t, timeout, 100*time.Millisecond, cond) // each poll may run a process: do not spin
}
