package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/bus"
	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/node/agent"
	"github.com/actorlet/actorlet/test/memcri"
	"github.com/actorlet/actorlet/test/testenv"
)

// TestEdgeObjectsAndEvents: an edge node gets the ConfigMaps and Secrets
// its pods use from the hub (a pod using both runs; without them it would
// stay in CreateContainerConfigError), central wins for them as for
// desired pods (a local override is put back after the uplink returns),
// and events cross the leaf link once, edge to hub: the hub stores each of
// the edge's events once, the edge none of the hub's.
func TestEdgeObjectsAndEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("edge objects: -short")
	}
	const node = "edge2"
	e := startEdgeOnHub(t, node, memcri.New())
	hub, op, link, cfg := e.hub, e.op, e.link, e.cfg
	lctx, lcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer lcancel()
	local, err := bus.Connect(lctx, bus.Options{URL: e.agent.BusURL(), CredsFile: agent.AdminCredsPath(cfg.RootDir), Name: "edge-operator"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(local.Close)
	bctx, bcancel := context.WithTimeout(context.Background(), waitFor)
	defer bcancel()
	if _, err := wire.Bootstrap(bctx, op.JS, wire.ProtocolSettings{Replicas: 1, EdgeNodes: []string{node}}); err != nil {
		t.Fatalf("bootstrap the hub with the edge node: %v", err)
	}

	// Centrally: a ConfigMap (node scope), a Secret (fleet scope) and a
	// pod using both.
	put := func(js jetstream.JetStream, bucket, key string, v any) {
		t.Helper()
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, "write "+bucket+" "+key, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), attempt)
			defer cancel()
			kv, err := js.KeyValue(ctx, bucket)
			if err != nil {
				return err
			}
			_, err = kv.Put(ctx, key, data)
			return err
		})
	}
	put(op.JS, wire.ConfigMapsBucket, wire.ObjectNodeKey(node, namespace, "settings"),
		&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: namespace}, Data: map[string]string{"MODE": "edge"}})
	put(op.JS, wire.SecretsBucket, wire.ObjectFleetKey(namespace, "token"),
		&v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "token", Namespace: namespace}, Data: map[string][]byte{"TOKEN": []byte("s3cr3t")}})
	p := podRef{node: node, name: "uses-objects"}
	var pod v1.Pod
	if err := json.Unmarshal(podJSONImage(p.name, "img/objects:1"), &pod); err != nil {
		t.Fatal(err)
	}
	pod.Spec.Containers[0].Env = []v1.EnvVar{
		{Name: "MODE", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "settings"}, Key: "MODE"}}},
		{Name: "TOKEN", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "token"}, Key: "TOKEN"}}},
	}
	put(op.JS, wire.DesiredBucket, p.desiredKey(), &pod)
	eventually(t, p.statusKey()+" Running on the hub", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), attempt)
		defer cancel()
		kv, err := op.JS.KeyValue(ctx, wire.StatusBucket)
		if err != nil {
			return err
		}
		return statusRunning(ctx, kv, p)
	})

	// The hub's operators reach the edge node's commands through the
	// pinned uplink (request there, reply back).
	hubClient := &wire.Client{NC: op.NC, Timeout: attempt}
	eventually(t, "get the pod from the hub through the uplink", func() error {
		got, err := hubClient.GetPod(context.Background(), node, namespace, p.name)
		if err == nil && got.Name != p.name {
			err = fmt.Errorf("got pod %q", got.Name)
		}
		return err
	})

	// Central wins: a local override of the ConfigMap is put back once the
	// uplink has been down and is up again.
	cmKey := wire.ObjectNodeKey(node, namespace, "settings")
	put(local.JS, wire.ConfigMapsBucket, cmKey,
		&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: namespace}, Data: map[string]string{"MODE": "local-override"}})
	link.Cut()
	eventually(t, "the hub sees the edge gone", func() error {
		if n := hub.LeafNodes(); n != 0 {
			return fmt.Errorf("%d leaf connections", n)
		}
		return nil
	})
	link.Restore()
	eventually(t, "the hub's ConfigMap wins on the edge", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), attempt)
		defer cancel()
		kv, err := local.JS.KeyValue(ctx, wire.ConfigMapsBucket)
		if err != nil {
			return err
		}
		e, err := kv.Get(ctx, cmKey)
		if err != nil {
			return err
		}
		var cm v1.ConfigMap
		if err := json.Unmarshal(e.Value(), &cm); err != nil {
			return err
		}
		if cm.Data["MODE"] != "edge" {
			return fmt.Errorf("MODE %q on the edge", cm.Data["MODE"])
		}
		return nil
	})

	// Events: a hub-side event for another node, and the edge's own.
	if _, err := op.JS.Publish(bctx, wire.EventSubject("hub-node", namespace, "x"), []byte(`{"reason":"HubOnly"}`)); err != nil {
		t.Fatal(err)
	}
	count := func(js jetstream.JetStream, filter string) (uint64, error) {
		ctx, cancel := context.WithTimeout(context.Background(), attempt)
		defer cancel()
		st, err := js.Stream(ctx, wire.EventsStream)
		if err != nil {
			return 0, err
		}
		info, err := st.Info(ctx, jetstream.WithSubjectFilter(filter))
		if err != nil {
			return 0, err
		}
		var n uint64
		for _, c := range info.State.Subjects {
			n += c
		}
		return n, nil
	}
	edgeEvents := wire.EventSubjectPrefix + "." + wire.EncodeName(node) + ".>"
	eventually(t, "the hub stores each edge event once", func() error {
		onEdge, err := count(local.JS, edgeEvents)
		if err != nil {
			return err
		}
		onHub, err := count(op.JS, edgeEvents)
		if err != nil {
			return err
		}
		if onEdge == 0 || onHub != onEdge {
			return fmt.Errorf("edge events: %d on the edge, %d on the hub", onEdge, onHub)
		}
		return nil
	})
	// Settled: the hub's event (published before the edge's last ones
	// crossed) never reached the edge.
	if n, err := count(local.JS, wire.EventSubjectPrefix+".hub-node.>"); err != nil || n != 0 {
		t.Fatalf("the edge stores %d of the hub's events (%v), want 0", n, err)
	}
}

// edgeOnHub is a 3-server hub (JetStream domain hub, leaf-node listeners,
// authenticated as docs/security.md says) with one edge agent joined to
// it through a cuttable link, on the edge's pinned uplink credentials.
type edgeOnHub struct {
	hub   *bustest.Cluster
	op    *bus.Conn // the hub's operator (admin)
	link  *uplink
	agent *agent.Agent
	cfg   agent.Config
}

// startEdgeOnHub starts the hub and the edge agent of node on rt and waits
// until the edge has joined.
func startEdgeOnHub(t *testing.T, node string, rt cri.Runtime) *edgeOnHub {
	t.Helper()
	e := &edgeOnHub{hub: bustest.StartClusterWith(t, 3, bustest.ClusterOptions{Domain: bus.DefaultHubDomain, Leaf: true, Secure: true})}
	e.op = e.hub.ConnectWithProtocol(t, "hub-operator", 1)
	e.link = newUplink(t, e.hub.LeafAddr(0))
	e.cfg = testenv.AgentConfig(t, node, "", rt)
	e.cfg.RelistPeriod = 500 * time.Millisecond
	e.cfg.NATS = agent.NATSConfig{Host: "127.0.0.1", Port: -1, LeafURL: "nats-leaf://" + e.link.addr(), LeafCreds: e.hub.LeafCreds(t, node)}
	e.agent = testenv.StartAgent(t, e.cfg)
	eventually(t, "the edge joins the hub", func() error {
		if e.hub.LeafNodes() == 0 {
			return errors.New("no leaf connection on the hub")
		}
		return nil
	})
	return e
}
