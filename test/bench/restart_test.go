package main

import (
	"context"
	"testing"
	"time"

	"github.com/actorlet/actorlet/cri"
)

func TestExpectedGap(t *testing.T) {
	want := []time.Duration{0, 0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 300 * time.Second, 300 * time.Second}
	for n, w := range want {
		if got := expectedGap(n); got != w {
			t.Errorf("expectedGap(%d) = %s, want %s", n, got, w)
		}
	}
}

func TestPLEGMode(t *testing.T) {
	for src, want := range map[string]string{
		"cri":        "events: CRI GetContainerEvents",
		"containerd": "events: containerd event service",
		"none":       "relisting",
		"unknown":    "unknown (unknown)",
	} {
		if got := plegMode(src); got != want {
			t.Errorf("plegMode(%q) = %q, want %q", src, got, want)
		}
	}
}

// The forced-relisting wrapper answers Unimplemented, which is what makes
// the agent's PLEG stay relisting.
func TestNoEventsIsUnimplemented(t *testing.T) {
	err := noEvents{}.GetContainerEvents(context.Background(), nil, nil)
	if !cri.IsUnimplemented(err) {
		t.Fatalf("GetContainerEvents = %v, want Unimplemented", err)
	}
}
