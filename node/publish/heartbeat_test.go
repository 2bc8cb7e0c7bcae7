package publish

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/podrules"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/node/allocatable"
)

// conditions is a switchable NodeConditions provider.
type conditions struct {
	mu  sync.Mutex
	c   messages.NodeConditions
	err error
}

func (c *conditions) set(nc messages.NodeConditions, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.c, c.err = nc, err
}

func (c *conditions) get(context.Context) (messages.NodeConditions, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.c, c.err
}

func readNode(t *testing.T, kv jetstream.KeyValue, name string) *v1.Node {
	t.Helper()
	e, err := kv.Get(context.Background(), wire.EncodeName(name))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var n v1.Node
	if err := json.Unmarshal(e.Value(), &n); err != nil {
		t.Fatalf("node entry is not a Node: %v", err)
	}
	return &n
}

func condition(n *v1.Node, t v1.NodeConditionType) v1.NodeCondition {
	for _, c := range n.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return v1.NodeCondition{}
}

func TestHeartbeatRegistersAndRefreshesNode(t *testing.T) {
	ts := startServer(t)
	_, js := ts.connect()
	kv := createBucket(t, js, wire.NodesBucket)
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	fc := clocktesting.NewFakeClock(start)
	conds := &conditions{}
	conds.set(messages.NodeConditions{RuntimeReady: true, PLEGHealthy: true}, nil)
	h, err := StartHeartbeat(context.Background(), HeartbeatConfig{
		JS: js, NodeName: "Edge.1", Conditions: conds.get, Clock: fc,
		Version: "v0.1.0", RuntimeVersion: "containerd://1.7.2", Labels: map[string]string{"zone": "a"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)

	var n *v1.Node
	eventually(t, 5*time.Second, "node registered", func() bool { n = readNode(t, kv, "Edge.1"); return n != nil })
	for k, want := range map[string]string{
		v1.LabelHostname: "edge.1", v1.LabelOSStable: runtime.GOOS, v1.LabelArchStable: runtime.GOARCH, "zone": "a",
	} {
		if n.Labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, n.Labels[k], want)
		}
	}
	if pods := n.Status.Capacity[v1.ResourcePods]; pods.Value() != podrules.DefaultMaxPods {
		t.Errorf("pods capacity %v", pods.String())
	}
	if cpu := n.Status.Allocatable[v1.ResourceCPU]; cpu.Value() != int64(runtime.NumCPU()) {
		t.Errorf("cpu allocatable %v", cpu.String())
	}
	if _, ok := n.Status.Capacity[v1.ResourceMemory]; !ok && runtime.GOOS == "linux" {
		t.Error("no memory capacity")
	}
	info := n.Status.NodeInfo
	if info.KubeletVersion != "v0.1.0" || info.ContainerRuntimeVersion != "containerd://1.7.2" || info.OperatingSystem != runtime.GOOS || info.Architecture != runtime.GOARCH {
		t.Errorf("nodeInfo %+v", info)
	}
	if len(n.Status.Addresses) == 0 {
		t.Error("no addresses")
	}
	for _, ct := range []v1.NodeConditionType{v1.NodeReady, NodeRuntimeReady, NodePLEGHealthy} {
		c := condition(n, ct)
		if c.Status != v1.ConditionTrue || !c.LastHeartbeatTime.Time.Equal(start) || !c.LastTransitionTime.Time.Equal(start) {
			t.Errorf("condition %s = %+v, want True at %v", ct, c, start)
		}
	}
	if ok, why := wire.NodeReady(n, start.Add(time.Second), wire.DefaultHeartbeatPeriod); !ok {
		t.Errorf("fresh node not ready: %s", why)
	}

	// The runtime goes away: the next beat reports it with a transition.
	conds.set(messages.NodeConditions{RuntimeReady: false, RuntimeMessage: "containerd is down", PLEGHealthy: true}, nil)
	fc.Step(wire.DefaultHeartbeatPeriod)
	beat2 := start.Add(wire.DefaultHeartbeatPeriod)
	eventually(t, 5*time.Second, "second beat", func() bool {
		n = readNode(t, kv, "Edge.1")
		return condition(n, v1.NodeReady).LastHeartbeatTime.Time.Equal(beat2)
	})
	ready, rt, pleg := condition(n, v1.NodeReady), condition(n, NodeRuntimeReady), condition(n, NodePLEGHealthy)
	if ready.Status != v1.ConditionFalse || !ready.LastTransitionTime.Time.Equal(beat2) || !strings.Contains(ready.Message, "containerd is down") {
		t.Errorf("Ready = %+v", ready)
	}
	if rt.Status != v1.ConditionFalse || rt.Reason != "RuntimeNotReady" {
		t.Errorf("RuntimeReady = %+v", rt)
	}
	if pleg.Status != v1.ConditionTrue || !pleg.LastTransitionTime.Time.Equal(start) {
		t.Errorf("PLEGHealthy kept True must keep its transition time: %+v", pleg)
	}
	if ok, why := wire.NodeReady(n, beat2, wire.DefaultHeartbeatPeriod); ok || !strings.Contains(why, "containerd is down") {
		t.Errorf("NodeReady = %v, %q", ok, why)
	}

	// A provider failure turns conditions Unknown; Beat forces a refresh.
	conds.set(messages.NodeConditions{}, errors.New("supervisor busy"))
	if err := h.Beat(context.Background()); err != nil {
		t.Fatal(err)
	}
	n = readNode(t, kv, "Edge.1")
	if c := condition(n, v1.NodeReady); c.Status != v1.ConditionUnknown || !strings.Contains(c.Message, "supervisor busy") {
		t.Errorf("Ready after provider error = %+v", c)
	}
	last, err := h.Last()
	if err != nil || last == nil || condition(last, v1.NodeReady).Status != v1.ConditionUnknown {
		t.Errorf("Last() = %v, %v", last, err)
	}

	// After Stop the entry goes stale for readers.
	h.Stop()
	if ok, why := wire.NodeReady(n, beat2.Add(45*time.Second), wire.DefaultHeartbeatPeriod); ok || why != "heartbeat stale for 45s" {
		t.Errorf("stale node: %v, %q", ok, why)
	}
	if !n.CreationTimestamp.Time.Equal(start) {
		t.Errorf("creationTimestamp = %v, want the first registration %v", n.CreationTimestamp, start)
	}

	// A restarted agent keeps the node's creation time (its age).
	fc.Step(time.Hour)
	h2, err := StartHeartbeat(context.Background(), HeartbeatConfig{JS: js, NodeName: "Edge.1", Conditions: conds.get, Clock: fc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h2.Stop)
	if err := h2.Beat(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n = readNode(t, kv, "Edge.1"); !n.CreationTimestamp.Time.Equal(start) {
		t.Errorf("creationTimestamp after restart = %v, want %v", n.CreationTimestamp, start)
	}
}

func TestHeartbeatRetriesUntilBucketExists(t *testing.T) {
	ts := startServer(t)
	_, js := ts.connect()
	fc := clocktesting.NewFakeClock(time.Now())
	conds := &conditions{}
	conds.set(messages.NodeConditions{RuntimeReady: true, PLEGHealthy: true}, nil)
	h, err := StartHeartbeat(context.Background(), HeartbeatConfig{JS: js, NodeName: "n1", Conditions: conds.get, Clock: fc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	eventually(t, 5*time.Second, "first beat to fail", func() bool { _, err := h.Last(); return err != nil })
	kv := createBucket(t, js, wire.NodesBucket)
	fc.Step(wire.DefaultHeartbeatPeriod)
	eventually(t, 5*time.Second, "node registered on the next beat", func() bool { return readNode(t, kv, "n1") != nil })
}

func TestStartHeartbeatErrors(t *testing.T) {
	ts := startServer(t)
	_, js := ts.connect()
	get := (&conditions{}).get
	tests := []struct {
		name string
		cfg  HeartbeatConfig
		want string
	}{
		{"no JS", HeartbeatConfig{NodeName: "n", Conditions: get}, "JS"},
		{"no node", HeartbeatConfig{JS: js, Conditions: get}, "NodeName"},
		{"no conditions", HeartbeatConfig{JS: js, NodeName: "n"}, "Conditions"},
		{"negative period", HeartbeatConfig{JS: js, NodeName: "n", Conditions: get, Period: -1}, "Period"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := StartHeartbeat(context.Background(), tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one naming %s", err, tt.want)
			}
		})
	}
}

// TestNodeShuttingDownIsNotReady: a node in a graceful shutdown reports
// Ready false with the kubelet's reason and message, its other conditions
// unchanged.
func TestNodeShuttingDownIsNotReady(t *testing.T) {
	conds := nodeConditions(messages.NodeConditions{RuntimeReady: true, PLEGHealthy: true, ShuttingDown: true}, nil, time.Now(), nil)
	for _, c := range conds {
		switch c.Type {
		case v1.NodeReady:
			if c.Status != v1.ConditionFalse || c.Reason != "KubeletNotReady" || c.Message != NodeShuttingDownMessage {
				t.Fatalf("Ready = %s %q %q, want False KubeletNotReady %q", c.Status, c.Reason, c.Message, NodeShuttingDownMessage)
			}
		case v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure:
			if c.Status != v1.ConditionFalse {
				t.Fatalf("%s = %s, want False", c.Type, c.Status)
			}
		default:
			if c.Status != v1.ConditionTrue {
				t.Fatalf("%s = %s, want True", c.Type, c.Status)
			}
		}
	}
}

// Pressure conditions are reported False with the kubelet's reasons, True
// while the eviction manager reports them; the node stays Ready (the
// kubelet's readiness does not depend on pressure).
func TestNodePressureConditions(t *testing.T) {
	byType := func(conds []v1.NodeCondition) map[v1.NodeConditionType]v1.NodeCondition {
		m := map[v1.NodeConditionType]v1.NodeCondition{}
		for _, c := range conds {
			m[c.Type] = c
		}
		return m
	}
	calm := byType(nodeConditions(messages.NodeConditions{RuntimeReady: true, PLEGHealthy: true}, nil, time.Now(), nil))
	for typ, reason := range map[v1.NodeConditionType]string{v1.NodeMemoryPressure: "KubeletHasSufficientMemory",
		v1.NodeDiskPressure: "KubeletHasNoDiskPressure", v1.NodePIDPressure: "KubeletHasSufficientPID"} {
		if c := calm[typ]; c.Status != v1.ConditionFalse || c.Reason != reason {
			t.Errorf("no pressure: %s = %s %s, want False %s", typ, c.Status, c.Reason, reason)
		}
	}
	under := byType(nodeConditions(messages.NodeConditions{RuntimeReady: true, PLEGHealthy: true,
		Pressure: []v1.NodeConditionType{v1.NodeMemoryPressure}}, nil, time.Now(), nil))
	if c := under[v1.NodeMemoryPressure]; c.Status != v1.ConditionTrue || c.Reason != "KubeletHasInsufficientMemory" || c.Message != "kubelet has insufficient memory available" {
		t.Errorf("under memory pressure: %+v", c)
	}
	if c := under[v1.NodeDiskPressure]; c.Status != v1.ConditionFalse {
		t.Errorf("DiskPressure under memory pressure only: %+v", c)
	}
	if c := under[v1.NodeReady]; c.Status != v1.ConditionTrue {
		t.Errorf("Ready under memory pressure: %+v, want True", c)
	}
}

// The node record reports Allocatable = Capacity − reservations, as the
// kubelet's.
func TestHeartbeatReportsAllocatable(t *testing.T) {
	ts := startServer(t)
	_, js := ts.connect()
	kv := createBucket(t, js, wire.NodesBucket)
	conds := &conditions{}
	conds.set(messages.NodeConditions{RuntimeReady: true, PLEGHealthy: true}, nil)
	evict, err := allocatable.ParseEvictionHard("--eviction-hard", "memory.available<100Mi,nodefs.available<10%")
	if err != nil {
		t.Fatal(err)
	}
	disk := resource.MustParse("100Gi")
	h, err := StartHeartbeat(context.Background(), HeartbeatConfig{
		JS: js, NodeName: "n1", Conditions: conds.get, MaxPods: 10, EphemeralStorage: &disk,
		Reserved: allocatable.Config{
			SystemReserved: v1.ResourceList{v1.ResourceMemory: resource.MustParse("200Mi"), v1.ResourcePods: resource.MustParse("1")},
			EvictionHard:   evict,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	var n *v1.Node
	eventually(t, 5*time.Second, "node registered", func() bool { n = readNode(t, kv, "n1"); return n != nil })
	if pods := n.Status.Allocatable[v1.ResourcePods]; pods.Value() != 9 {
		t.Errorf("pods allocatable %s, want 9", pods.String())
	}
	capDisk, allocDisk := n.Status.Capacity[v1.ResourceEphemeralStorage], n.Status.Allocatable[v1.ResourceEphemeralStorage]
	if capDisk.Cmp(disk) != 0 || allocDisk.Value() != 90<<30 {
		t.Errorf("ephemeral-storage capacity %s allocatable %s, want 100Gi and 90Gi (less nodefs.available<10%%)", capDisk.String(), allocDisk.String())
	}
	capMem, ok := n.Status.Capacity[v1.ResourceMemory]
	if !ok {
		t.Skip("no memory capacity on this host")
	}
	allocMem := n.Status.Allocatable[v1.ResourceMemory]
	if want := capMem.Value() - 300<<20; allocMem.Value() != want {
		t.Errorf("memory allocatable %d, want capacity %d − 300Mi = %d", allocMem.Value(), capMem.Value(), want)
	}
}
