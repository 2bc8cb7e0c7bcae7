//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Scenario: on containerd the agent follows container events (CRI
// GetContainerEvents on containerd 2.x, containerd's own event service on
// 1.6, which lacks it) instead of waiting for a relist: the agent logs the
// source its CRI client chose (cri.Client.EventSource) and it is the one
// the suite's containerd should give. With the relist pushed out to a
// minute, a container that dies is restarted long before any relist or
// periodic resync could have seen its death: only an event can have told
// the agent.
func TestContainerDeathIsSeenFromRuntimeEvents(t *testing.T) {
	a := startAgent(t, agentOptions{args: []string{"--relist-period", "60s"}})

	sources := map[string]string{
		"1.6": "Container events: containerd's event service",
		"2":   "Container events: CRI GetContainerEvents",
	}
	want := sources[ctrd.Flavor]
	var mode string
	eventually(t, 30*time.Second, func() error {
		b, err := os.ReadFile(a.logPath)
		if err != nil {
			return err
		}
		for _, m := range sources {
			if strings.Contains(string(b), m) {
				mode = m
				return nil
			}
		}
		return fmt.Errorf("no container event source in the agent log yet")
	})
	t.Logf("containerd %s (%s): event source: %s", ctrd.Flavor, ctrd.Version, mode)
	if mode != want {
		t.Errorf("event source on containerd %s: %q, want %q", ctrd.Flavor, mode, want)
	}
	// The CRI client's own word, as the agent's PLEG reads it.
	if got, want := clientEventSource(t), map[string]string{"1.6": "containerd", "2": "cri"}[ctrd.Flavor]; got != want {
		t.Errorf("cri.Client.EventSource on containerd %s: %q, want %q", ctrd.Flavor, got, want)
	}

	a.apply(t, shPod("dies", "sleep 2; exit 3"))
	p := a.waitPod(t, "dies", 30*time.Second, func(p *v1.Pod) error {
		cs := containerStatus(p, "main")
		if cs == nil || cs.RestartCount < 1 || cs.LastTerminationState.Terminated == nil {
			return fmt.Errorf("not restarted yet")
		}
		return nil
	})
	if code := containerStatus(p, "main").LastTerminationState.Terminated.ExitCode; code != 3 {
		t.Errorf("last exit code %d, want 3", code)
	}
}

// clientEventSource follows the suite's containerd's container events with
// a fresh CRI client until it has chosen its source, and returns it.
func clientEventSource(t *testing.T) string {
	t.Helper()
	c := criFor(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.GetContainerEvents(ctx, make(chan *runtimeapi.ContainerEventResponse, 64), nil) }()
	defer func() { cancel(); <-done }()
	var src string
	eventually(t, 30*time.Second, func() error {
		if src = c.EventSource(); src == "unknown" {
			return fmt.Errorf("no event source chosen yet")
		}
		return nil
	})
	return src
}
