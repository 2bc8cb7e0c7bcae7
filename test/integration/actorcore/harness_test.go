package actorcore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/bus"
	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/cri/kuberuntime"
	"github.com/actorlet/actorlet/cri/procruntime"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/node/agent"
	"github.com/actorlet/actorlet/test/testenv"
	"github.com/actorlet/actorlet/test/testutil"
)

// markerEnv is set in every container an env runs, to a value unique to the
// env, so the processes it started can be found in /proc.
const markerEnv = "ACTORLET_IT_MARKER"

// namespace is where every test pod lives.
const namespace = "default"

// env is one node under test: an in-process nats-server, a process runtime
// served over gRPC on a unix socket, an agent using it, and an operator's
// connection to the bus.
type env struct {
	t      *testing.T
	node   string
	marker string // markerEnv's value in this env's containers
	dir    string // scratch directory for files containers and probes share

	srv     *bustest.Server
	conn    *bus.Conn // the operator's connection
	desired jetstream.KeyValue
	status  jetstream.KeyValue
	cmd     *wire.Client

	rt     *procruntime.Runtime
	rtRoot string
	cri    *cri.Client // the operator's (and by default the agent's) runtime client

	cfg   agent.Config
	agent *agent.Agent

	bg context.Context // canceled when the test ends
}

// envOptions are the few knobs tests turn.
type envOptions struct {
	// wrap, when set, wraps the runtime client the agent is given.
	wrap func(cri.Runtime) cri.Runtime
	// syncFrequency is the resync interval of healthy pods (default 5 s).
	syncFrequency time.Duration
	// maxPods is the node's pod limit (default 110).
	maxPods int
	// configure, when set, adjusts the agent's configuration last.
	configure func(*agent.Config)
	// runtime, when set, starts the env's process runtime instead of
	// testenv.Runtime (isolation options).
	runtime func(t testing.TB, rootDir string) (*procruntime.Runtime, *cri.Client)
}

// newEnv starts a nats-server, a process runtime and an agent. Everything is
// stopped by t.Cleanup, in this order: agent, runtime client, runtime (every
// container killed), a check that no process of the env survived, server.
func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	base := t.TempDir()
	e := &env{
		t:      t,
		node:   "it-" + randomHex(4),
		marker: "it-" + randomHex(8),
		dir:    filepath.Join(base, "shared"),
		rtRoot: filepath.Join(base, "runtime"),
	}
	if err := os.MkdirAll(e.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bg, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e.bg = bg
	e.srv = bustest.StartServer(t, bustest.ServerOptions{})
	e.conn = bustest.ConnectWithProtocol(t, e.srv)
	e.desired = e.bucket(wire.DesiredBucket)
	e.status = e.bucket(wire.StatusBucket)
	e.cmd = &wire.Client{NC: e.conn.NC, Timeout: 20 * time.Second}

	t.Cleanup(e.checkNoProcessLeft)
	if o.runtime != nil {
		e.rt, e.cri = o.runtime(t, e.rtRoot)
	} else {
		e.startRuntime()
	}

	var runtime cri.Runtime = e.cri
	if o.wrap != nil {
		runtime = o.wrap(e.cri)
	}
	e.cfg = testenv.AgentConfig(t, e.node, e.srv.ClientURL(), runtime)
	e.cfg.RootDir = filepath.Join(base, "agent")
	e.cfg.SyncFrequency = 5 * time.Second
	if o.syncFrequency > 0 {
		e.cfg.SyncFrequency = o.syncFrequency
	}
	if o.maxPods > 0 {
		e.cfg.MaxPods = o.maxPods
	}
	e.cfg.NodeStatusUpdateFrequency = 2 * time.Second
	if o.configure != nil {
		o.configure(&e.cfg)
	}
	e.startAgent()
	return e
}

// startRuntime starts the env's process runtime and dials it.
func (e *env) startRuntime() {
	e.rt, e.cri = testenv.Runtime(e.t, e.rtRoot)
}

// startAgent starts an agent on e.cfg; t.Cleanup stops it (pods keep
// running until the runtime is destroyed).
func (e *env) startAgent() *agent.Agent {
	e.t.Helper()
	e.agent = testenv.StartAgent(e.t, e.cfg)
	return e.agent
}

// checkNoProcessLeft runs after the runtime was destroyed: no container
// process and no shim of this env may be alive.
func (e *env) checkNoProcessLeft() {
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := e.processes()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			e.t.Errorf("processes of the test still alive after cleanup: %v", left)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// processes lists the live processes of this env: containers (and their
// children and probe commands) by the marker, shims by their state dir.
func (e *env) processes() []int {
	return processesWithEnv(markerEnv+"="+e.marker, "ACTORLET_PROCRUNTIME_SHIM="+e.rtRoot)
}

func (e *env) bucket(name string) jetstream.KeyValue {
	e.t.Helper()
	kv, err := e.conn.JS.KeyValue(context.Background(), name)
	if err != nil {
		e.t.Fatalf("open bucket %s: %v", name, err)
	}
	return kv
}

// call is a context for one bus or runtime call, ended by the test's end
// or after 20 s.
func (e *env) call() (context.Context, context.CancelFunc) {
	return context.WithTimeout(e.bg, 20*time.Second)
}

// pod builds a pod of the given containers; each gets the env's marker and
// an image (the process runtime only records images).
func (e *env) pod(name string, containers ...v1.Container) *v1.Pod {
	grace := int64(1)
	for i := range containers {
		containers[i].Env = append(containers[i].Env, v1.EnvVar{Name: markerEnv, Value: e.marker})
		if containers[i].Image == "" {
			containers[i].Image = "busybox:1.36"
		}
	}
	return &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       v1.PodSpec{Containers: containers, TerminationGracePeriodSeconds: &grace},
	}
}

// shell is a container running script with /bin/sh.
func shell(name, script string) v1.Container {
	return v1.Container{Name: name, Command: []string{"/bin/sh", "-c", script}}
}

// execProbe probes with a shell command every second, acting on the first
// failure or success.
func execProbe(script string, initialDelay int32) *v1.Probe {
	return &v1.Probe{
		ProbeHandler:        v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"/bin/sh", "-c", script}}},
		InitialDelaySeconds: initialDelay,
		PeriodSeconds:       1,
		TimeoutSeconds:      5,
		FailureThreshold:    1,
		SuccessThreshold:    1,
	}
}

func (e *env) desiredKey(name string) string { return wire.DesiredNodeKey(e.node, namespace, name) }
func (e *env) statusKey(name string) string  { return wire.StatusKey(e.node, namespace, name) }

// apply writes pod to the node's desired bucket, as actorletctl apply does.
func (e *env) apply(pod *v1.Pod) {
	e.t.Helper()
	data, err := json.Marshal(pod)
	if err != nil {
		e.t.Fatalf("encode pod %s: %v", pod.Name, err)
	}
	ctx, cancel := e.call()
	defer cancel()
	if _, err := e.desired.Put(ctx, e.desiredKey(pod.Name), data); err != nil {
		e.t.Fatalf("apply pod %s: %v", pod.Name, err)
	}
}

// remove deletes the pod's desired key: immediate deletion.
func (e *env) remove(name string) {
	e.t.Helper()
	ctx, cancel := e.call()
	defer cancel()
	if err := e.desired.Delete(ctx, e.desiredKey(name)); err != nil {
		e.t.Fatalf("delete desired pod %s: %v", name, err)
	}
}

// deleteGracefully rewrites the desired pod with a deletion timestamp and
// grace period, as actorletctl delete does.
func (e *env) deleteGracefully(name string, grace int64) {
	e.t.Helper()
	ctx, cancel := e.call()
	defer cancel()
	entry, err := e.desired.Get(ctx, e.desiredKey(name))
	if err != nil {
		e.t.Fatalf("read desired pod %s: %v", name, err)
	}
	var pod v1.Pod
	if err := json.Unmarshal(entry.Value(), &pod); err != nil {
		e.t.Fatalf("decode desired pod %s: %v", name, err)
	}
	now := metav1.Now()
	pod.DeletionTimestamp = &now
	pod.DeletionGracePeriodSeconds = &grace
	e.apply(&pod)
}

// desiredExists reports whether the pod's desired key exists.
func (e *env) desiredExists(name string) (bool, error) {
	ctx, cancel := e.call()
	defer cancel()
	_, err := e.desired.Get(ctx, e.desiredKey(name))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// podStatus reads the pod's entry in the status bucket.
func (e *env) podStatus(name string) (*v1.Pod, error) {
	ctx, cancel := e.call()
	defer cancel()
	entry, err := e.status.Get(ctx, e.statusKey(name))
	if err != nil {
		return nil, fmt.Errorf("status of %s: %w", name, err)
	}
	var pod v1.Pod
	if err := json.Unmarshal(entry.Value(), &pod); err != nil {
		return nil, fmt.Errorf("decode status of %s: %w", name, err)
	}
	return &pod, nil
}

// waitPod waits until the pod's published status satisfies cond and
// returns it.
func (e *env) waitPod(name string, timeout time.Duration, cond func(*v1.Pod) error) *v1.Pod {
	e.t.Helper()
	return testutil.WaitPod(e.t, timeout, 50*time.Millisecond, func() (*v1.Pod, error) { return e.podStatus(name) }, cond)
}

// running is a waitPod condition: phase Running with every container
// running.
func running(p *v1.Pod) error {
	if p.Status.Phase != v1.PodRunning {
		return fmt.Errorf("phase %q", p.Status.Phase)
	}
	if len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
		return fmt.Errorf("%d container statuses for %d containers", len(p.Status.ContainerStatuses), len(p.Spec.Containers))
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return fmt.Errorf("container %s not running", cs.Name)
		}
	}
	return nil
}

// containerStatus finds a container's status in a pod, or fails the test.
func containerStatus(t *testing.T, p *v1.Pod, name string) v1.ContainerStatus {
	t.Helper()
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == name {
			return cs
		}
	}
	t.Fatalf("pod %s has no status for container %s: %s", p.Name, name, testutil.PodSummary(p))
	return v1.ContainerStatus{}
}

// events reads every event recorded about the pod from the events stream
// (about the node itself when name is empty).
func (e *env) events(name string) ([]v1.Event, error) {
	subject := wire.EventSubject(e.node, namespace, name)
	if name == "" {
		subject = wire.EventSubject(e.node, "", "")
	}
	ctx, cancel := e.call()
	defer cancel()
	cons, err := e.conn.JS.OrderedConsumer(ctx, wire.EventsStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject},
	})
	if err != nil {
		return nil, fmt.Errorf("consume events of %s: %w", name, err)
	}
	batch, err := cons.FetchNoWait(1000)
	if err != nil {
		return nil, fmt.Errorf("fetch events of %s: %w", name, err)
	}
	var out []v1.Event
	for msg := range batch.Messages() {
		var ev v1.Event
		if err := json.Unmarshal(msg.Data(), &ev); err != nil {
			return nil, fmt.Errorf("decode event of %s: %w", name, err)
		}
		out = append(out, ev)
	}
	return out, batch.Error()
}

// waitEvent waits for an event about the pod (the node when name is
// empty) with the given type and reason.
func (e *env) waitEvent(name, eventType, reason string, timeout time.Duration) v1.Event {
	e.t.Helper()
	var found v1.Event
	eventually(e.t, timeout, func() error {
		evs, err := e.events(name)
		if err != nil {
			return err
		}
		var seen []string
		for _, ev := range evs {
			if ev.Type == eventType && ev.Reason == reason {
				found = ev
				return nil
			}
			seen = append(seen, ev.Type+"/"+ev.Reason)
		}
		return fmt.Errorf("no %s/%s event about %s; seen %v", eventType, reason, name, seen)
	})
	return found
}

// containers lists the runtime's container instances of a pod.
func (e *env) containers(pod string) ([]*runtimeapi.Container, error) {
	ctx, cancel := e.call()
	defer cancel()
	return e.cri.ListContainers(ctx, &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{kuberuntime.LabelPodName: pod, kuberuntime.LabelPodNamespace: namespace},
	})
}

// sandboxes lists the runtime's sandboxes of a pod.
func (e *env) sandboxes(pod string) ([]*runtimeapi.PodSandbox, error) {
	ctx, cancel := e.call()
	defer cancel()
	return e.cri.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{kuberuntime.LabelPodName: pod, kuberuntime.LabelPodNamespace: namespace},
	})
}

// eventually polls cond every 50 ms until it returns nil, or fails the test
// with its last error after timeout.
func eventually(t *testing.T, timeout time.Duration, cond func() error) {
	t.Helper()
	testutil.EventuallyEvery(t, timeout, 50*time.Millisecond, cond)
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
