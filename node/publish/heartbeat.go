package publish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/podrules"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/node/allocatable"
)

// Heartbeat defaults.
const ()

// HeartbeatConfig configures a Heartbeat.
type HeartbeatConfig struct {
	JS       jetstream.JetStream
	NodeName string
	// Period between refreshes (default 10 s).
	Period time.Duration
	// Conditions reports runtime and PLEG health (the agent asks the
	// supervisor). Required.
	Conditions func(ctx context.Context) (messages.NodeConditions, error)
	// Version is the agent's version (nodeInfo.kubeletVersion).
	Version string
	// RuntimeVersion is the CRI runtime, e.g. "containerd://1.7.2".
	RuntimeVersion string
	// Labels are added to the well-known hostname/os/arch labels.
	Labels map[string]string
	// Taints are published as spec.taints (--register-with-taints).
	Taints []v1.Taint
	// MaxPods is the pods capacity (default podrules.DefaultMaxPods).
	MaxPods int
	// Reserved is held back from the capacity: Allocatable is computed
	// from it as the kubelet's (zero: Allocatable = Capacity).
	Reserved allocatable.Config
	// EphemeralStorage, when set, is the ephemeral-storage capacity (the
	// filesystem of the agent's root directory).
	EphemeralStorage *resource.Quantity
	// Clock paces the beats (default real time).
	Clock clock.WithTicker
}

// Heartbeat registers the node in the nodes bucket and refreshes it every
// period with its current conditions.
type Heartbeat struct {
	cfg   HeartbeatConfig
	facts nodeFacts // labels and taints under placement
	// placement guards facts.labels and facts.taints, which SetPlacement
	// replaces.
	placement sync.Mutex

	kv   jetstream.KeyValue // beat goroutine only
	prev []v1.NodeCondition // beat goroutine only
	// created is the node's creation time (beat goroutine only).
	created time.Time
	beats   chan chan error // Beat requests
	last    struct {
		sync.Mutex
		node *v1.Node
		err  error
	}

	cancel context.CancelFunc
	done   chan struct{}
	stop   sync.Once
}

// StartHeartbeat beats once at once, then every period, until ctx ends or
// Stop is called.
func StartHeartbeat(ctx context.Context, cfg HeartbeatConfig) (*Heartbeat, error) {
	switch {
	case cfg.JS == nil:
		return nil, errors.New("heartbeat: JS is required")
	case cfg.NodeName == "":
		return nil, errors.New("heartbeat: NodeName is required")
	case cfg.Conditions == nil:
		return nil, errors.New("heartbeat: Conditions is required")
	case cfg.Period < 0:
		return nil, fmt.Errorf("heartbeat: Period %v must not be negative", cfg.Period)
	case cfg.MaxPods < 0:
		return nil, fmt.Errorf("heartbeat: MaxPods %d must not be negative", cfg.MaxPods)
	}
	if cfg.Period == 0 {
		cfg.Period = wire.DefaultHeartbeatPeriod
	}
	if cfg.MaxPods == 0 {
		cfg.MaxPods = podrules.DefaultMaxPods
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	h := &Heartbeat{
		cfg:   cfg,
		facts: detectFacts(cfg.NodeName, cfg.Labels, cfg.MaxPods, cfg.Version, cfg.RuntimeVersion),
		beats: make(chan chan error),
		done:  make(chan struct{}),
	}
	h.facts.period = cfg.Period
	if cfg.EphemeralStorage != nil {
		h.facts.capacity[v1.ResourceEphemeralStorage] = *cfg.EphemeralStorage
	}
	h.facts.allocatable = cfg.Reserved.Allocatable(h.facts.capacity)
	h.facts.taints = append([]v1.Taint(nil), cfg.Taints...)
	ctx, h.cancel = context.WithCancel(ctx)
	ticker := cfg.Clock.NewTicker(cfg.Period)
	go h.run(ctx, ticker)
	return h, nil
}

// Stop ends the heartbeat. The node entry stays: readers see it go stale.
func (h *Heartbeat) Stop() {
	h.stop.Do(func() {
		h.cancel()
		<-h.done
	})
}

// Beat refreshes the node entry now and returns the outcome.
func (h *Heartbeat) Beat(ctx context.Context) error {
	reply := make(chan error, 1)
	select {
	case h.beats <- reply:
	case <-ctx.Done():
		return ctx.Err()
	case <-h.done:
		return errors.New("heartbeat stopped")
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Last is the node last written (nil before the first success) and the
// error of the last beat.
func (h *Heartbeat) Last() (*v1.Node, error) {
	h.last.Lock()
	defer h.last.Unlock()
	if h.last.node == nil {
		return nil, h.last.err
	}
	return h.last.node.DeepCopy(), h.last.err
}

func (h *Heartbeat) run(ctx context.Context, ticker clock.Ticker) {
	defer close(h.done)
	defer ticker.Stop()
	h.beatAndLog(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
			h.beatAndLog(ctx)
		case reply := <-h.beats:
			reply <- h.beat(ctx)
		}
	}
}

func (h *Heartbeat) beatAndLog(ctx context.Context) {
	err := h.beat(ctx)
	if err != nil && ctx.Err() == nil {
		klog.ErrorS(err, "Node heartbeat failed", "node", h.cfg.NodeName)
	}
}

// beat asks for the conditions and writes the node, both bounded by the
// period so a slow supervisor or bus never piles beats up.
func (h *Heartbeat) beat(ctx context.Context) (err error) {
	defer func() {
		h.last.Lock()
		h.last.err = err
		h.last.Unlock()
	}()
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Period)
	defer cancel()
	conds, condErr := h.cfg.Conditions(ctx)
	if condErr != nil {
		condErr = fmt.Errorf("get node conditions: %w", condErr)
		klog.V(2).InfoS("Reporting node conditions as unknown", "node", h.cfg.NodeName, "err", condErr)
	}
	if h.kv == nil {
		kv, err := h.cfg.JS.KeyValue(ctx, wire.NodesBucket)
		if err != nil {
			return fmt.Errorf("open bucket %s: %w", wire.NodesBucket, err)
		}
		h.kv = kv
	}
	if h.created.IsZero() {
		h.register(ctx)
	}
	h.placement.Lock()
	facts := h.facts
	h.placement.Unlock()
	node := buildNode(facts, conds, condErr, h.cfg.Clock.Now(), h.prev)
	node.CreationTimestamp = metav1.NewTime(h.created)
	data, err := json.Marshal(node)
	if err != nil {
		return fmt.Errorf("encode node %s: %w", h.cfg.NodeName, err)
	}
	if _, err := h.kv.Put(ctx, wire.EncodeName(h.cfg.NodeName), data); err != nil {
		return fmt.Errorf("put node %s: %w", h.cfg.NodeName, err)
	}
	h.prev = node.Status.Conditions
	h.last.Lock()
	h.last.node = node
	h.last.Unlock()
	klog.V(5).InfoS("Node heartbeat written", "node", h.cfg.NodeName)
	return nil
}

// register sets the node's creation time: kept from an earlier entry of the
// same node (its age survives agent restarts, as a Node object's does),
// along with its conditions' transition times; else now.
func (h *Heartbeat) register(ctx context.Context) {
	h.created = h.cfg.Clock.Now()
	e, err := h.kv.Get(ctx, wire.EncodeName(h.cfg.NodeName))
	if err != nil {
		return // not registered before (or unreadable: start afresh)
	}
	var prev v1.Node
	if json.Unmarshal(e.Value(), &prev) != nil || prev.CreationTimestamp.IsZero() {
		return
	}
	h.created = prev.CreationTimestamp.Time
	if h.prev == nil {
		h.prev = prev.Status.Conditions
	}
}

// SetPlacement replaces the node's labels (besides the well-known
// hostname/os/arch ones) and taints in its entry from the next beat on.
func (h *Heartbeat) SetPlacement(labels map[string]string, taints []v1.Taint) {
	fresh := map[string]string{
		v1.LabelHostname:   strings.ToLower(h.cfg.NodeName),
		v1.LabelOSStable:   runtime.GOOS,
		v1.LabelArchStable: runtime.GOARCH,
	}
	for k, v := range labels {
		fresh[k] = v
	}
	h.placement.Lock()
	defer h.placement.Unlock()
	h.facts.labels = fresh
	h.facts.taints = append([]v1.Taint(nil), taints...)
}
