package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/actorlet/actorlet/messages/wire"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/bus"
	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/cri/kuberuntime"
	"github.com/actorlet/actorlet/node/agent"
	"github.com/actorlet/actorlet/test/memcri"
	"github.com/actorlet/actorlet/test/testenv"
	"github.com/actorlet/actorlet/test/testutil"
)

// waitFor bounds every wait for an outcome that normally takes a second or
// two: generous, because two cores are shared by everything.
const waitFor = 60 * time.Second

// attempt bounds one request to the bus inside a retry loop.
const attempt = 5 * time.Second

// namespace of every test pod.
const namespace = "cluster-test"

// fleet is a 3-server cluster with R3 buckets, an operator's connection
// to every server, and agents on in-memory runtimes.
type fleet struct {
	t     *testing.T
	cl    *bustest.Cluster
	op    *bus.Conn
	nodes []*node
}

type node struct {
	name  string
	rt    *memcri.Runtime
	agent *agent.Agent
}

func newFleet(t *testing.T, agents int) *fleet {
	t.Helper()
	// Authenticated as the product is by default (docs/security.md): the
	// operator creates the buckets with admin credentials and provisions
	// each node, which runs with its node credentials.
	cl := bustest.StartClusterWith(t, 3, bustest.ClusterOptions{Secure: true})
	f := &fleet{t: t, cl: cl, op: cl.ConnectWithProtocol(t, "operator", 3)}
	var wg sync.WaitGroup
	f.nodes = make([]*node, agents)
	errs := make([]error, agents)
	creds := make([]string, agents)
	for i := range agents {
		creds[i] = cl.NodeCreds(t, fmt.Sprintf("n%d", i))
	}
	for i := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.nodes[i], errs[i] = f.startNode(fmt.Sprintf("n%d", i), creds[i])
		}()
	}
	wg.Wait()
	for _, n := range f.nodes {
		if n != nil {
			t.Cleanup(n.agent.Stop) // before the servers go (cleanups run in reverse)
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fleet) startNode(name, creds string) (*node, error) {
	rt := memcri.New()
	cfg := testenv.AgentConfig(f.t, name, f.cl.URL(), rt)
	cfg.RelistPeriod = 500 * time.Millisecond
	cfg.NodeStatusUpdateFrequency = time.Second
	cfg.NATS.CredsFile, cfg.NATS.Replicas = creds, 3
	a, err := agent.Start(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("start agent %s: %w", name, err)
	}
	return &node{name: name, rt: rt, agent: a}, nil
}

// connName is the name a node's bus connection has on the server.
func (n *node) connName() string { return "actorlet-" + n.name }

func (f *fleet) kv(bucket string) jetstream.KeyValue {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	var kv jetstream.KeyValue
	f.eventually("open bucket "+bucket, func() error {
		actx, cancel := context.WithTimeout(ctx, attempt)
		defer cancel()
		var err error
		kv, err = f.op.JS.KeyValue(actx, bucket)
		return err
	})
	return kv
}

func (f *fleet) eventually(what string, cond func() error) {
	f.t.Helper()
	eventually(f.t, what, cond)
}

// eventually waits up to waitFor for cond, polling every 100 ms (each
// poll may ask the bus for many keys).
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	testutil.EventuallyEvery(t, waitFor, 100*time.Millisecond, func() error {
		if err := cond(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	})
}

// podJSON is a one-container pod as an operator writes it.
func podJSON(name string) []byte { return podJSONImage(name, "test/sleep:1") }

// podRef names a pod on a node.
type podRef struct{ node, name string }

func (p podRef) desiredKey() string { return wire.DesiredNodeKey(p.node, namespace, p.name) }
func (p podRef) statusKey() string  { return wire.StatusKey(p.node, namespace, p.name) }

// waitRunning waits until every pod's status on the bus is Running with its
// container running.
func (f *fleet) waitRunning(pods []podRef) {
	f.t.Helper()
	status := f.kv(wire.StatusBucket)
	pending := append([]podRef(nil), pods...)
	f.eventually(fmt.Sprintf("%d pods Running on the bus", len(pods)), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var still []podRef
		var last error
		for _, p := range pending {
			if err := statusRunning(ctx, status, p); err != nil {
				still = append(still, p)
				last = err
			}
		}
		pending = still
		if len(pending) > 0 {
			return fmt.Errorf("%d of %d not Running yet, e.g. %v", len(pending), len(pods), last)
		}
		return nil
	})
}

func statusRunning(ctx context.Context, kv jetstream.KeyValue, p podRef) error {
	e, err := kv.Get(ctx, p.statusKey())
	if err != nil {
		return fmt.Errorf("status %s: %w", p.statusKey(), err)
	}
	var pod v1.Pod
	if err := json.Unmarshal(e.Value(), &pod); err != nil {
		return fmt.Errorf("status %s: %w", p.statusKey(), err)
	}
	if pod.Status.Phase != v1.PodRunning || len(pod.Status.ContainerStatuses) != 1 || pod.Status.ContainerStatuses[0].State.Running == nil {
		return fmt.Errorf("status %s: phase %s", p.statusKey(), pod.Status.Phase)
	}
	return nil
}

// runsExactlyOnce checks, in every node's runtime, that each wanted pod
// has exactly one sandbox and one container ever created (nothing ran
// twice) and that no other pod runs.
func (f *fleet) runsExactlyOnce(pods []podRef) {
	f.t.Helper()
	want := map[string]map[string]bool{}
	for _, p := range pods {
		if want[p.node] == nil {
			want[p.node] = map[string]bool{}
		}
		want[p.node][p.name] = true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, n := range f.nodes {
		sbs, err := n.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{})
		if err != nil {
			f.t.Fatal(err)
		}
		cs, err := n.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{})
		if err != nil {
			f.t.Fatal(err)
		}
		sandboxes, containers := map[string]int{}, map[string]int{}
		for _, sb := range sbs {
			sandboxes[sb.Metadata.Name]++
		}
		for _, c := range cs {
			if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				containers[c.Labels[kuberuntime.LabelPodName]]++
			}
		}
		var bad []string
		for name := range want[n.name] {
			if sandboxes[name] != 1 || containers[name] != 1 {
				bad = append(bad, fmt.Sprintf("%s: %d sandboxes, %d running containers", name, sandboxes[name], containers[name]))
			}
		}
		for name := range sandboxes {
			if !want[n.name][name] {
				bad = append(bad, fmt.Sprintf("%s: not wanted here but has %d sandboxes", name, sandboxes[name]))
			}
		}
		sort.Strings(bad)
		if len(bad) > 0 {
			f.t.Errorf("node %s: pods not run exactly once: %v", n.name, bad)
		}
	}
}

// heartbeatRevision is the revision of a node's entry in the nodes bucket.
// One attempt is bounded (a request sent while a stream has no leader gets
// no answer): callers retry.
func (f *fleet) heartbeatRevision(node string) (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), attempt)
	defer cancel()
	kv, err := f.op.JS.KeyValue(ctx, wire.NodesBucket)
	if err != nil {
		return 0, err
	}
	e, err := kv.Get(ctx, wire.EncodeName(node))
	if err != nil {
		return 0, err
	}
	return e.Revision(), nil
}
