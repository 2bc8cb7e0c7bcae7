package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
)

// startVerbs are the calls a pod's start makes in the runtime, timed by a
// timedClient for both the agent and the raw client.
var startVerbs = []string{"RunPodSandbox", "CreateContainer", "StartContainer"}

// timedClient is the runtime client with its start calls timed: what the
// agent and the raw client hand the runtime, call for call, so a gap
// between them can be told apart as slower calls (the same work costing
// the runtime more) or fewer calls in flight (slots idle). Every other
// method, and every optional interface of *cri.Client, is the client's.
// The first pod configuration an agent sends is kept (podTemplate).
type timedClient struct {
	*cri.Client
	clock    *callClock
	template *podTemplate
}

func (t timedClient) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	t.template.captureSandbox(config)
	defer t.clock.begin("RunPodSandbox")()
	return t.Client.RunPodSandbox(ctx, config, handler)
}

func (t timedClient) CreateContainer(ctx context.Context, sandbox string, config *runtimeapi.ContainerConfig, sc *runtimeapi.PodSandboxConfig) (string, error) {
	t.template.captureContainer(config)
	defer t.clock.begin("CreateContainer")()
	return t.Client.CreateContainer(ctx, sandbox, config, sc)
}

func (t timedClient) StartContainer(ctx context.Context, id string) error {
	defer t.clock.begin("StartContainer")()
	return t.Client.StartContainer(ctx, id)
}

// callClock sums, per verb, the calls' count and time in a window that
// starts at reset.
type callClock struct {
	mu    sync.Mutex
	since time.Time
	verbs map[string]*verbTime
}

type verbTime struct {
	calls    int
	total    time.Duration
	inFlight int
	peak     int
}

func newCallClock() *callClock {
	return &callClock{since: time.Now(), verbs: map[string]*verbTime{}}
}

// begin counts a call of verb in flight and returns its end.
func (c *callClock) begin(verb string) (end func()) {
	start := time.Now()
	c.mu.Lock()
	v := c.verbs[verb]
	if v == nil {
		v = &verbTime{}
		c.verbs[verb] = v
	}
	v.inFlight++
	v.peak = max(v.peak, v.inFlight)
	c.mu.Unlock()
	return func() {
		took := time.Since(start)
		c.mu.Lock()
		defer c.mu.Unlock()
		v := c.verbs[verb] // a reset may have replaced it
		if v == nil {
			v = &verbTime{inFlight: 1}
			c.verbs[verb] = v
		}
		v.calls++
		v.total += took
		v.inFlight--
	}
}

// reset starts a new window; calls in flight carry over.
func (c *callClock) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := map[string]*verbTime{}
	for verb, v := range c.verbs {
		if v.inFlight > 0 {
			next[verb] = &verbTime{inFlight: v.inFlight, peak: v.inFlight}
		}
	}
	c.since, c.verbs = time.Now(), next
}

// summary is the window so far, one "verb: mean ms · mean in flight (peak)"
// per start verb: the mean in flight is the calls' summed time over the
// window's length.
func (c *callClock) summary() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	window := time.Since(c.since)
	var parts []string
	for _, verb := range startVerbs {
		v := c.verbs[verb]
		if v == nil || v.calls == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.0f ms · %.1f (%d)", strings.TrimSuffix(verb, "Container"),
			float64(v.total.Milliseconds())/float64(v.calls), v.total.Seconds()/window.Seconds(), v.peak))
	}
	return strings.Join(parts, ", ")
}
