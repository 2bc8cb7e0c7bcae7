package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/actorlet/actorlet/messages/wire"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/bus"
	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/node/agent"
	"github.com/actorlet/actorlet/test/memcri"
	"github.com/actorlet/actorlet/test/testenv"
)

const edgeNode = "edge1"

// TestEdgeNodePartition: an edge node runs its embedded server as a leaf
// node of a 3-server hub. With its uplink cut, a local operator applies a
// pod, changes a central one and calls the node's commands; a static pod
// starts; meanwhile the hub's operator adds a pod and changes the same
// central pod. When the uplink returns: central desired state wins key by
// key, central writes made while away run, and every status written during
// the partition reaches the hub.
func TestEdgeNodePartition(t *testing.T) {
	if testing.Short() {
		t.Skip("edge partition: -short")
	}
	hub := bustest.StartClusterWith(t, 3, bustest.ClusterOptions{Domain: bus.DefaultHubDomain, Leaf: true, Secure: true})
	op := hub.ConnectWithProtocol(t, "hub-operator", 3)
	link := newUplink(t, hub.LeafAddr(0))

	manifests := t.TempDir()
	rt := memcri.New()
	cfg := testenv.AgentConfig(t, edgeNode, "", rt) // the embedded server, a leaf node of the hub
	cfg.RelistPeriod = 500 * time.Millisecond
	cfg.NodeStatusUpdateFrequency = time.Second
	cfg.PodManifestPath = manifests
	cfg.NATS = agent.NATSConfig{Host: "127.0.0.1", Port: -1, LeafURL: "nats-leaf://" + link.addr(), LeafCreds: hub.LeafCreds(t, edgeNode)}
	a, err := agent.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("start the edge agent: %v", err)
	}
	t.Cleanup(a.Stop)
	lctx, lcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer lcancel()
	// A local operator uses the admin credentials the edge agent wrote for
	// its own embedded server (docs/security.md).
	adminCreds := agent.AdminCredsPath(cfg.RootDir)
	local, err := bus.Connect(lctx, bus.Options{URL: a.BusURL(), CredsFile: adminCreds, Name: "edge-operator"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(local.Close)

	e := &edge{t: t, hub: hub, hubJS: op.JS, localJS: local.JS, localURL: a.BusURL(), localCreds: adminCreds}
	// The operator adds the edge node to the hub once it has joined (the
	// hub's sources of its buckets then start at once; nats-server backs
	// off a failing source by 10 s more per failure).
	e.eventually("the edge joins the hub", func() error {
		if hub.LeafNodes() == 0 {
			return errors.New("no leaf connection on the hub")
		}
		return nil
	})
	bctx, bcancel := context.WithTimeout(context.Background(), waitFor)
	defer bcancel()
	if _, err := wire.Bootstrap(bctx, op.JS, wire.ProtocolSettings{Replicas: 3, EdgeNodes: []string{edgeNode}}); err != nil {
		t.Fatalf("bootstrap the hub with the edge node: %v", err)
	}
	central := podRef{node: edgeNode, name: "central"}
	untouched := podRef{node: edgeNode, name: "central-untouched"}
	e.put(e.hubJS, central, "img/central:1")
	e.put(e.hubJS, untouched, "img/untouched:1")
	e.waitRunningIn(e.hubJS, central) // the whole path: hub → edge → runtime → edge status → hub
	e.waitRunningIn(e.hubJS, untouched)

	// Cut the uplink.
	link.Cut()
	e.eventually("the hub sees the leaf node gone", func() error {
		if n := hub.LeafNodes(); n != 0 {
			return fmt.Errorf("%d leaf connections on the hub", n)
		}
		return nil
	})
	t.Log("uplink cut")

	// Centrally, while the edge is away: a new pod, and a change.
	added := podRef{node: edgeNode, name: "added-while-away"}
	e.put(e.hubJS, added, "img/added:1")
	e.put(e.hubJS, central, "img/central:2")

	// Locally: apply through actorletctl, change the central pod, a static
	// pod, and the node's commands.
	localPod := podRef{node: edgeNode, name: "local"}
	manifest := filepath.Join(t.TempDir(), "local.json")
	if err := os.WriteFile(manifest, podJSONImage(localPod.name, "img/local:1"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.ctl("apply", "-f", manifest, "--node", edgeNode)
	e.put(e.localJS, central, "img/central:local-override")
	e.put(e.localJS, untouched, "img/untouched:local-override")
	e.eventually("the local override runs while cut off", func() error {
		return runsImage(e, e.localJS, untouched, "img/untouched:local-override")
	})
	static := podRef{node: edgeNode, name: "static-" + edgeNode}
	if err := os.WriteFile(filepath.Join(manifests, "static.json"), podJSONImage("static", "img/static:1"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.waitRunningIn(e.localJS, localPod)
	e.waitRunningIn(e.localJS, static)
	if out := e.ctl("describe", "pod", localPod.name, "-n", namespace, "--node", edgeNode); !strings.Contains(out, localPod.name) {
		t.Errorf("describe through the local server while cut off:\n%s", out)
	}
	if out := e.ctl("get", "pods", "-n", namespace, "--node", edgeNode); !strings.Contains(out, "local") || !strings.Contains(out, "Running") {
		t.Errorf("get pods through the local server while cut off:\n%s", out)
	}
	if hubHas(e, static) {
		t.Errorf("the hub has the static pod's status while the uplink is cut")
	}

	// Restore the uplink: everything converges, key by key.
	link.Restore()
	t.Log("uplink restored")
	e.eventually("the edge's desired keys equal the hub's (central wins)", e.desiredConverged)
	e.waitRunningIn(e.hubJS, added)
	e.eventually("the central pod runs the central spec", func() error {
		return imageOf(e, central, "img/central:2")
	})
	e.eventually("the locally overridden central pod is back to the central spec", func() error {
		return imageOf(e, untouched, "img/untouched:1")
	})
	e.eventually("every edge status is on the hub", e.statusConverged)
}

type edge struct {
	t          *testing.T
	hub        *bustest.Cluster
	hubJS      jetstream.JetStream
	localJS    jetstream.JetStream
	localURL   string
	localCreds string
}

func (e *edge) eventually(what string, cond func() error) {
	e.t.Helper()
	eventually(e.t, what, cond)
}

func (e *edge) kv(js jetstream.JetStream, bucket string) (jetstream.KeyValue, context.Context, context.CancelFunc, error) {
	ctx, cancel := context.WithTimeout(context.Background(), attempt)
	kv, err := js.KeyValue(ctx, bucket)
	return kv, ctx, cancel, err
}

func (e *edge) put(js jetstream.JetStream, p podRef, image string) {
	e.t.Helper()
	e.eventually("write "+p.desiredKey(), func() error {
		kv, ctx, cancel, err := e.kv(js, wire.DesiredBucket)
		defer cancel()
		if err != nil {
			return err
		}
		_, err = kv.Put(ctx, p.desiredKey(), podJSONImage(p.name, image))
		return err
	})
}

func (e *edge) waitRunningIn(js jetstream.JetStream, p podRef) {
	e.t.Helper()
	e.eventually(p.statusKey()+" Running", func() error {
		kv, ctx, cancel, err := e.kv(js, wire.StatusBucket)
		defer cancel()
		if err != nil {
			return err
		}
		return statusRunning(ctx, kv, p)
	})
}

// ctl runs actorletctl against the edge node's own server.
func (e *edge) ctl(args ...string) string {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	out, err := exec.CommandContext(ctx, ctlBinary, append([]string{"--server", e.localURL, "--creds", e.localCreds, "--timeout", "5s"}, args...)...).CombinedOutput()
	if err != nil {
		e.t.Fatalf("actorletctl %v on the edge: %v\n%s", args, err, out)
	}
	return string(out)
}

// entries is every key → value of a bucket under filter.
func entries(js jetstream.JetStream, bucket, filter string) (map[string][]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), attempt)
	defer cancel()
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		return nil, err
	}
	lister, err := kv.ListKeysFiltered(ctx, filter)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for k := range lister.Keys() {
		en, err := kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[k] = en.Value()
	}
	return out, nil
}

// desiredConverged: every central key of the node has the hub's value on
// the edge; the only other key is the local operator's pod.
func (e *edge) desiredConverged() error {
	filter := wire.DesiredNodeWatch(edgeNode)
	hub, err := entries(e.hubJS, wire.DesiredBucket, filter)
	if err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	local, err := entries(e.localJS, wire.DesiredBucket, filter)
	if err != nil {
		return fmt.Errorf("edge: %w", err)
	}
	var diff []string
	for k, v := range hub {
		if !bytes.Equal(local[k], v) {
			diff = append(diff, fmt.Sprintf("%s: edge %q, hub %q", k, imageIn(local[k]), imageIn(v)))
		}
	}
	for k := range local {
		if _, ok := hub[k]; !ok && k != (podRef{node: edgeNode, name: "local"}).desiredKey() {
			diff = append(diff, k+": only on the edge")
		}
	}
	sort.Strings(diff)
	if len(diff) > 0 {
		return fmt.Errorf("%d keys differ: %v", len(diff), diff)
	}
	return nil
}

// statusConverged: every status key the edge has, the hub has, with the
// same value; and none the edge lacks.
func (e *edge) statusConverged() error {
	filter := wire.EncodeName(edgeNode) + ".>"
	local, err := entries(e.localJS, wire.StatusBucket, filter)
	if err != nil {
		return fmt.Errorf("edge: %w", err)
	}
	hub, err := entries(e.hubJS, wire.StatusBucket, filter)
	if err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	if len(local) < 5 {
		return fmt.Errorf("edge has %d statuses, want 5 (central, untouched, added, local, static)", len(local))
	}
	var diff []string
	for k, v := range local {
		if !bytes.Equal(hub[k], v) {
			diff = append(diff, k)
		}
	}
	for k := range hub {
		if _, ok := local[k]; !ok {
			diff = append(diff, k+" (only on the hub)")
		}
	}
	sort.Strings(diff)
	if len(diff) > 0 {
		return fmt.Errorf("statuses differ between edge and hub: %v", diff)
	}
	return nil
}

func hubHas(e *edge, p podRef) bool {
	kv, ctx, cancel, err := e.kv(e.hubJS, wire.StatusBucket)
	defer cancel()
	if err != nil {
		return false
	}
	_, err = kv.Get(ctx, p.statusKey())
	return err == nil
}

// imageOf checks the image of the pod's status on the hub.
func imageOf(e *edge, p podRef, want string) error {
	return runsImage(e, e.hubJS, p, want)
}

// runsImage checks that the pod's status in js's status bucket shows it
// running with image want.
func runsImage(e *edge, js jetstream.JetStream, p podRef, want string) error {
	kv, ctx, cancel, err := e.kv(js, wire.StatusBucket)
	defer cancel()
	if err != nil {
		return err
	}
	en, err := kv.Get(ctx, p.statusKey())
	if err != nil {
		return err
	}
	if got := imageIn(en.Value()); got != want {
		return fmt.Errorf("%s runs %q, want %q", p.statusKey(), got, want)
	}
	if err := statusRunning(ctx, kv, p); err != nil {
		return err
	}
	return nil
}

func imageIn(data []byte) string {
	var p v1.Pod
	if json.Unmarshal(data, &p) != nil || len(p.Spec.Containers) == 0 {
		return ""
	}
	return p.Spec.Containers[0].Image
}

// podJSONImage is podJSON with a chosen image.
func podJSONImage(name, image string) []byte {
	grace := int64(1)
	p := &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers:                    []v1.Container{{Name: "c", Image: image, Command: []string{"sleep", "3600"}, ImagePullPolicy: v1.PullIfNotPresent}},
		},
	}
	data, err := json.Marshal(p)
	if err != nil {
		panic(err)
	}
	return data
}
