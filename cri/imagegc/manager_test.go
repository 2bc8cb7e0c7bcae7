package imagegc

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critesting "k8s.io/cri-api/pkg/apis/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/actorlet/actorlet/cri/procruntime/proctest"
	"github.com/actorlet/actorlet/test/testutil"
)

// TestMain lets the process runtime re-execute this test binary as its
// per-container shim.
func TestMain(m *testing.M) { proctest.MainQuiet(m, "5") }

// fakes is the upstream CRI fakes as one Runtime.
type fakes struct {
	*critesting.FakeRuntimeService
	*critesting.FakeImageService
}

type harness struct {
	rt    fakes
	clock *clocktesting.FakeClock
	fs    FsStats
	m     *Manager
}

func newHarness(t *testing.T, p Policy, pinned ...string) *harness {
	t.Helper()
	h := &harness{
		rt:    fakes{critesting.NewFakeRuntimeService(), critesting.NewFakeImageService()},
		clock: clocktesting.NewFakeClock(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)),
		fs:    FsStats{Capacity: 1000, Available: 1000},
	}
	h.rt.SetFakeFilesystemUsage([]*runtimeapi.FilesystemUsage{{FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: "/var/lib/images"}}})
	h.rt.Images = map[string]*runtimeapi.Image{}
	m, err := New(h.rt, Options{Policy: p, Clock: h.clock, FsStats: func(_ context.Context, mp string) (FsStats, error) {
		if mp != "/var/lib/images" {
			return FsStats{}, errors.New("wrong mountpoint " + mp)
		}
		return h.fs, nil
	}, Pinned: pinned})
	if err != nil {
		t.Fatal(err)
	}
	h.m = m
	return h
}

func (h *harness) addImage(id string, size uint64, pinned bool) {
	h.rt.FakeImageService.Lock()
	defer h.rt.FakeImageService.Unlock()
	h.rt.Images[id] = &runtimeapi.Image{Id: id, RepoTags: []string{"example.com/" + id + ":1"}, Size: size, Pinned: pinned}
}

// useImage adds a container (exited when exited) referencing the image as
// containerd does: its ID as ImageRef.
func (h *harness) useImage(cid, imageRef string, exited bool) {
	state := runtimeapi.ContainerState_CONTAINER_RUNNING
	if exited {
		state = runtimeapi.ContainerState_CONTAINER_EXITED
	}
	h.rt.FakeRuntimeService.Lock()
	defer h.rt.FakeRuntimeService.Unlock()
	h.rt.Containers[cid] = &critesting.FakeContainer{ContainerStatus: runtimeapi.ContainerStatus{
		Id: cid, State: state, Image: &runtimeapi.ImageSpec{Image: imageRef}, ImageRef: imageRef}}
}

func (h *harness) dropContainer(cid string) {
	h.rt.FakeRuntimeService.Lock()
	defer h.rt.FakeRuntimeService.Unlock()
	delete(h.rt.Containers, cid)
}

func (h *harness) images() []string {
	h.rt.FakeImageService.Lock()
	defer h.rt.FakeImageService.Unlock()
	var out []string
	for id := range h.rt.Images {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

func (h *harness) gc(t *testing.T) (Result, error) {
	t.Helper()
	return h.m.GarbageCollect(context.Background())
}

// mustGC runs a collection whose result does not matter (one that detects
// images and their use) and fails t on its error.
func (h *harness) mustGC(t *testing.T) {
	t.Helper()
	if _, err := h.gc(t); err != nil {
		t.Fatal(err)
	}
}

// TestOrderAndThresholds: over the high threshold, unused images go least
// recently used first (never used ones before used ones), down to the low
// threshold and no further; an image in use by any container (running or
// exited), a pinned one and a young one stay.
func TestOrderAndThresholds(t *testing.T) {
	h := newHarness(t, DefaultPolicy())
	for _, id := range []string{"old-used", "recent-used", "never-used", "running", "exited", "pinned"} {
		h.addImage(id, 100, id == "pinned")
	}
	h.useImage("c1", "old-used", false)
	h.useImage("c2", "recent-used", false)
	h.useImage("c3", "running", false)
	h.useImage("c4", "exited", true)
	h.mustGC(t) // first detection, under the threshold
	h.clock.Step(time.Minute)
	h.dropContainer("c1")
	h.mustGC(t) // old-used last used at 12:00
	h.clock.Step(time.Minute)
	h.dropContainer("c2")
	h.mustGC(t) // recent-used last used at 12:01
	h.clock.Step(5 * time.Minute)
	h.addImage("young", 100, false) // first seen now: younger than the minimum age

	// 90% used: free down to 80% = 100 bytes: only the never-used image.
	h.fs = FsStats{Capacity: 1000, Available: 100}
	res, err := h.gc(t)
	if err != nil {
		t.Fatal(err)
	}
	if res.UsagePercent != 90 || res.Wanted != 100 || !slices.Equal(res.Removed, []string{"example.com/never-used:1"}) || res.Freed != 100 {
		t.Fatalf("result %+v, want 90%%, wanted 100, removed never-used", res)
	}
	// 95% used: 150 bytes to free: the least recently used, then the next.
	h.fs = FsStats{Capacity: 1000, Available: 50}
	res, err = h.gc(t)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Removed, []string{"example.com/old-used:1", "example.com/recent-used:1"}) {
		t.Fatalf("removed %v, want old-used then recent-used", res.Removed)
	}
	// Still full: nothing left that may go; the error names both amounts.
	res, err = h.gc(t)
	if err == nil || !strings.Contains(err.Error(), "attempted to free 150 bytes, but only found 0 bytes eligible") {
		t.Fatalf("err %v, want the shortfall", err)
	}
	if len(res.Removed) != 0 {
		t.Fatalf("removed %v", res.Removed)
	}
	if got := h.images(); !slices.Equal(got, []string{"exited", "pinned", "running", "young"}) {
		t.Fatalf("images left %v", got)
	}
	// Past the minimum age the young image goes too; the in-use ones never.
	h.clock.Step(2 * time.Minute)
	if _, err = h.gc(t); err == nil {
		t.Fatal("want the shortfall error")
	}
	if got := h.images(); !slices.Equal(got, []string{"exited", "pinned", "running"}) {
		t.Fatalf("images left %v", got)
	}
}

// TestUnderThreshold: at 84% nothing is removed; at exactly the high
// threshold a collection runs.
func TestUnderThreshold(t *testing.T) {
	h := newHarness(t, DefaultPolicy())
	h.addImage("a", 10, false)
	h.addImage("b", 10, false)
	h.mustGC(t)
	h.clock.Step(time.Hour)
	h.fs = FsStats{Capacity: 100, Available: 16}
	if res, err := h.gc(t); err != nil || len(res.Removed) != 0 {
		t.Fatalf("84%%: %+v %v", res, err)
	}
	h.fs = FsStats{Capacity: 100, Available: 15}
	if res, err := h.gc(t); err != nil || len(res.Removed) != 1 || res.Wanted != 5 {
		t.Fatalf("85%%: %+v %v, want one image removed for 5 bytes", res, err)
	}
}

// TestMarkUsed: an image a container was created from between detections
// counts as recently used; one marked while a collection runs is kept.
func TestMarkUsed(t *testing.T) {
	h := newHarness(t, DefaultPolicy())
	h.addImage("a", 100, false)
	h.addImage("b", 100, false)
	h.mustGC(t)
	h.clock.Step(10 * time.Minute)
	h.m.MarkUsed("a") // the container came and went before the next detection
	h.clock.Step(time.Minute)
	h.fs = FsStats{Capacity: 1000, Available: 100}
	res, err := h.gc(t)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Removed, []string{"example.com/b:1"}) {
		t.Fatalf("removed %v, want the never-used b", res.Removed)
	}
}

// TestMaxAge: with --image-maximum-gc-age, images unused for longer go
// whatever the usage, but not before the agent has run that long; an
// image never used counts from when it was first seen.
func TestMaxAge(t *testing.T) {
	p := DefaultPolicy()
	p.MaxAge = time.Hour
	h := newHarness(t, p)
	h.addImage("stale", 100, false)
	h.addImage("busy", 100, false)
	h.useImage("c1", "busy", true)
	h.mustGC(t)
	h.clock.Step(30 * time.Minute)
	h.addImage("fresh", 100, false)
	h.clock.Step(31 * time.Minute)
	res, err := h.gc(t)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Removed, []string{"example.com/stale:1"}) {
		t.Fatalf("removed %v, want stale only", res.Removed)
	}
	if got := h.images(); !slices.Equal(got, []string{"busy", "fresh"}) {
		t.Fatalf("images left %v", got)
	}
}

// TestPinnedByOption: the sandbox image the agent names (by tag, a short
// Docker Hub name, or ID) is never collected, though no container lists
// it, neither by age nor for space; the runtime's own pin holds too.
func TestPinnedByOption(t *testing.T) {
	p := DefaultPolicy()
	p.MaxAge = time.Hour
	p.MinAge = 0
	h := newHarness(t, p, "example.com/pause:1", "pause", "sha256:byid")
	h.addImage("pause", 100, false) // tagged example.com/pause:1
	h.addImage("sha256:byid", 100, false)
	h.addImage("hub", 100, false)
	h.rt.Images["hub"].RepoTags = []string{"docker.io/library/pause:latest"}
	h.addImage("runtime-pinned", 100, true)
	h.addImage("other", 100, false)
	h.clock.Step(2 * time.Hour)
	h.fs = FsStats{Capacity: 1000, Available: 0}
	res, err := h.gc(t)
	if err == nil {
		t.Fatal("no error though the pinned images keep usage over the threshold")
	}
	if !slices.Equal(res.Removed, []string{"example.com/other:1"}) {
		t.Fatalf("removed %v, want only the unpinned image", res.Removed)
	}
}

// TestRuntimeErrors: a failing listing or removal is reported, and a
// removal failure does not stop the others; capacity 0 is an error.
func TestRuntimeErrors(t *testing.T) {
	h := newHarness(t, DefaultPolicy())
	h.addImage("a", 100, false)
	h.addImage("b", 100, false)
	h.rt.FakeImageService.InjectError("ListImages", errors.New("boom"))
	if _, err := h.gc(t); err == nil || !strings.Contains(err.Error(), "list images: boom") {
		t.Fatalf("err %v", err)
	}
	h.mustGC(t)
	h.clock.Step(time.Hour)
	h.fs = FsStats{Capacity: 1000, Available: 0}
	h.rt.FakeImageService.InjectError("RemoveImage", errors.New("busy"))
	res, err := h.gc(t)
	if err == nil || !strings.Contains(err.Error(), "busy") || len(res.Removed) != 1 {
		t.Fatalf("%+v %v: want one removal failed, the other done", res, err)
	}
	h.fs = FsStats{}
	if _, err := h.gc(t); err == nil || !strings.Contains(err.Error(), "invalid capacity 0") {
		t.Fatalf("err %v", err)
	}
}

func TestPolicyValidate(t *testing.T) {
	for _, tc := range []struct {
		p    Policy
		want string
	}{
		{DefaultPolicy(), ""},
		{Policy{HighThresholdPercent: 100, LowThresholdPercent: 99}, ""},
		{Policy{HighThresholdPercent: 101, LowThresholdPercent: 80}, "image-gc-high-threshold: 101 must be between 0 and 100"},
		{Policy{HighThresholdPercent: 85, LowThresholdPercent: -1}, "image-gc-low-threshold: -1 must be between 0 and 100"},
		{Policy{HighThresholdPercent: 80, LowThresholdPercent: 80}, "image-gc-low-threshold: 80 must be less than image-gc-high-threshold 80"},
		{Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: -time.Second}, "image-minimum-gc-age: must not be negative"},
		{Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: time.Hour, MaxAge: time.Minute}, "image-maximum-gc-age: 1m0s must be greater than image-minimum-gc-age 1h0m0s"},
	} {
		testutil.WantError(t, tc.p.Validate(), tc.want)
	}
}

// TestDeleteUnusedImages: the eviction manager's reclaim removes every
// unused image past the minimum age whatever the usage (the filesystem
// is empty here); in-use (running or exited container), pinned and young
// images stay.
func TestDeleteUnusedImages(t *testing.T) {
	h := newHarness(t, DefaultPolicy())
	for _, id := range []string{"unused", "running", "exited", "pinned"} {
		h.addImage(id, 100, id == "pinned")
	}
	h.useImage("c1", "running", false)
	h.useImage("c2", "exited", true)
	h.mustGC(t) // first detection
	h.clock.Step(5 * time.Minute)
	h.addImage("young", 100, false)
	res, err := h.m.DeleteUnusedImages(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Removed, []string{"example.com/unused:1"}) || res.Freed != 100 {
		t.Fatalf("result %+v, want only the unused image removed", res)
	}
	if got := h.images(); !slices.Equal(got, []string{"exited", "pinned", "running", "young"}) {
		t.Fatalf("images left %v", got)
	}
	// A runtime that fails the removal: the error names the image.
	h.clock.Step(5 * time.Minute)
	h.rt.FakeImageService.InjectError("RemoveImage", errors.New("disk on fire"))
	res, err = h.m.DeleteUnusedImages(context.Background())
	if err == nil || !strings.Contains(err.Error(), "remove image example.com/young:1 (young): disk on fire") || len(res.Removed) != 0 {
		t.Fatalf("result %+v, err %v: want the failed removal named", res, err)
	}
}
