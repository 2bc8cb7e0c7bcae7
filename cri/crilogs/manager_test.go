package crilogs_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/cri/crilogs"
	"github.com/actorlet/actorlet/cri/procruntime/proctest"
	"github.com/actorlet/actorlet/test/testutil"
)

func TestMain(m *testing.M) { proctest.MainQuiet(m, "") }

// startRuntime serves a process runtime in a temp dir and dials it.
func startRuntime(t *testing.T) (*cri.Client, string) {
	t.Helper()
	dir := t.TempDir()
	_, c := proctest.Start(t, filepath.Join(dir, "state"))
	return c, filepath.Join(dir, "logs")
}

// startChatty runs, in a new sandbox, a container that logs ~60-byte
// records as fast as it can (about 2,000 lines a second), and returns its
// ID and log path.
func startChatty(t *testing.T, c *cri.Client, logDir, sandbox string) (string, string) {
	t.Helper()
	return startLogger(t, c, logDir, sandbox, "i=0; while true; do echo line$i; i=$((i+1)); done")
}

// startQuiet runs, in a new sandbox, a container that logs one line and
// sleeps, waits for the line and returns the log's path; the container
// is stopped when the test ends.
func startQuiet(t *testing.T, c *cri.Client, logDir, sandbox string) string {
	t.Helper()
	id, path := startLogger(t, c, logDir, sandbox, "echo hello; exec sleep 3600")
	t.Cleanup(func() { _ = c.StopContainer(context.Background(), id, 0) })
	testutil.Eventually(t, 10*time.Second, func() error {
		if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), "hello") {
			return fmt.Errorf("no first line in %s yet", path)
		}
		return nil
	})
	return path
}

// grow appends n bytes to the log at path, as a container's output would.
func grow(t *testing.T, path string, n int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Write([]byte(strings.Repeat("x", n)))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

// rotatedCount is how many rotated files the log at path has.
func rotatedCount(t *testing.T, path string) int {
	t.Helper()
	r, err := crilogs.RotatedFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	return len(r)
}

// runManager runs a manager of logs up to maxSize bytes (4 files) on a
// fake clock until the test ends, and returns the clock once the
// manager's tickers wait on it.
func runManager(t *testing.T, ctx context.Context, c *cri.Client, maxSize int64) *clocktesting.FakeClock {
	t.Helper()
	clk, _ := runManagerOf(t, ctx, c, maxSize)
	return clk
}

// runManagerOf is runManager on any runtime, and returns the manager too.
func runManagerOf(t *testing.T, ctx context.Context, rt crilogs.Runtime, maxSize int64) (*clocktesting.FakeClock, *crilogs.Manager) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m, err := crilogs.NewManager(rt, crilogs.Policy{MaxSize: maxSize, MaxFiles: 4}, crilogs.DefaultMonitorInterval, clk)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	testutil.Until(t, 5*time.Second, "the manager's tickers", clk.HasWaiters)
	return clk, m
}

// startLogger runs script in a container of a new sandbox and returns its
// ID and log path.
func startLogger(t *testing.T, c *cri.Client, logDir, sandbox, script string) (string, string) {
	t.Helper()
	ctx := context.Background()
	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: sandbox, Namespace: "default", Uid: "u-" + sandbox},
		LogDirectory: logDir,
	}
	sb, err := c.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "chatty"},
		Image:    &runtimeapi.ImageSpec{Image: "busybox"},
		Command:  []string{"sh", "-c", script},
		LogPath:  "chatty/0.log",
	}
	if _, err := c.PullImage(ctx, cfg.Image, nil, sbCfg); err != nil {
		t.Fatal(err)
	}
	id, err := c.CreateContainer(ctx, sb, cfg, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	return id, filepath.Join(logDir, "chatty", "0.log")
}

// TestRotationWithProcessRuntime: a chatty container's log is rotated
// whenever it reaches MaxSize: never more than MaxFiles files, the older
// rotated ones compressed, and a tail across them sees every line in order.
func TestRotationWithProcessRuntime(t *testing.T) {
	c, logDir := startRuntime(t)
	ctx := context.Background()
	id, path := startChatty(t, c, logDir, "rot")

	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	const maxSize, maxFiles = 64 << 10, 4
	m, err := crilogs.NewManager(c, crilogs.Policy{MaxSize: maxSize, MaxFiles: maxFiles}, time.Second, clk)
	if err != nil {
		t.Fatal(err)
	}
	rotations := 0
	for rotations < 6 {
		testutil.Eventually(t, 20*time.Second, func() error {
			if info, err := os.Stat(path); err != nil || info.Size() < maxSize {
				return fmt.Errorf("log below %d bytes", maxSize)
			}
			return nil
		})
		if err := m.RotateLogs(ctx); err != nil {
			t.Fatal(err)
		}
		rotations++
		clk.Step(time.Second)
		rotated, err := crilogs.RotatedFiles(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(rotated)+1 > maxFiles {
			t.Fatalf("after %d rotations: %d files (%v), want at most %d", rotations, len(rotated)+1, rotated, maxFiles)
		}
		for i, r := range rotated {
			// As the kubelet does, the older files are compressed before the
			// current one is rotated: the two newest stay plain.
			if compressed := strings.HasSuffix(r, ".gz"); compressed != (i < len(rotated)-2) {
				t.Errorf("after %d rotations: %s: compressed %v; want every rotated file but the two newest compressed", rotations, filepath.Base(r), compressed)
			}
		}
	}
	if err := c.StopContainer(ctx, id, 0); err != nil {
		t.Fatal(err)
	}

	// A tail spanning the current file and the rotated ones is in order.
	r, err := crilogs.Tail(path, 5000)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 5000 {
		t.Fatalf("tail 5000 across rotated files: %d lines", len(lines))
	}
	prev := -1
	for i, l := range lines {
		_, content, ok := strings.Cut(l, " F line")
		n, err := strconv.Atoi(content)
		if !ok || err != nil {
			t.Fatalf("line %d: %q is not a CRI record of the counter", i, l)
		}
		if prev >= 0 && n != prev+1 {
			t.Fatalf("line %d: %d follows %d: output lost or repeated across a rotation", i, n, prev)
		}
		prev = n
	}
}

func TestPolicyValidate(t *testing.T) {
	for _, p := range []crilogs.Policy{{MaxSize: 0, MaxFiles: 5}, {MaxSize: 10, MaxFiles: 1}, {MaxSize: -1, MaxFiles: 5}} {
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "--container-log-max-") {
			t.Errorf("Validate(%+v) = %v, want an error naming the flag", p, err)
		}
	}
	if err := (crilogs.Policy{MaxSize: crilogs.DefaultMaxSize, MaxFiles: crilogs.DefaultMaxFiles}).Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// Between two passes (the monitor interval, 10 s by default) the sizes of
// the logs the last pass found are checked every SizeCheckInterval: a
// chatty container's log is rotated within a second of reaching MaxSize,
// not up to a whole interval later (a 10Mi limit gave files of 138 MB).
func TestSizeCheckedBetweenPasses(t *testing.T) {
	c, logDir := startRuntime(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	id, path := startChatty(t, c, logDir, "fast")
	t.Cleanup(func() { _ = c.StopContainer(context.Background(), id, 0) })

	const maxSize = 64 << 10
	clk := runManager(t, ctx, c, maxSize)
	clk.Step(crilogs.DefaultMonitorInterval) // the first pass finds the container
	// Let the pass finish, then let the file outgrow MaxSize again.
	time.Sleep(100 * time.Millisecond)
	testutil.Eventually(t, 20*time.Second, func() error {
		if info, err := os.Stat(path); err != nil || info.Size() < maxSize {
			return fmt.Errorf("log below %d bytes", maxSize)
		}
		return nil
	})
	before := rotatedCount(t, path)
	// Less than a monitor interval passes: only the size check can rotate.
	for step := 0; step < 5; step++ {
		clk.Step(crilogs.SizeCheckInterval)
		rotated := false
		for i := 0; i < 40 && !rotated; i++ {
			time.Sleep(50 * time.Millisecond)
			rotated = rotatedCount(t, path) > before
		}
		if rotated {
			break
		}
		if step == 4 {
			t.Fatalf("the log reached %d bytes and was not rotated within 5 size checks (%d rotated files)", maxSize, rotatedCount(t, path))
		}
	}
	// More rotations: the older files are compressed in the background
	// (never on the rotation's path), the two newest stay plain, and the
	// log keeps at most MaxFiles files once things settle.
	testutil.Eventually(t, 30*time.Second, func() error {
		clk.Step(crilogs.SizeCheckInterval)
		rotated, err := crilogs.RotatedFiles(path)
		if err != nil {
			return err
		}
		gz := 0
		for _, r := range rotated {
			if strings.HasSuffix(r, ".gz") {
				gz++
			}
		}
		if gz == 0 || len(rotated)+1 > 4 || strings.HasSuffix(rotated[len(rotated)-1], ".gz") || strings.HasSuffix(rotated[len(rotated)-2], ".gz") {
			return fmt.Errorf("rotated files %v: want some compressed, the newest two plain, at most 4 files", rotated)
		}
		return nil
	})
}

// Between two size checks only the logs that were growing are measured
// again: a quiet log (most of a node's) costs one stat a size check, not
// one every StatInterval, and if it suddenly passes MaxSize it is rotated
// at the next size check.
func TestQuietLogMeasuredAtSizeChecksOnly(t *testing.T) {
	c, logDir := startRuntime(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	path := startQuiet(t, c, logDir, "quiet")

	const maxSize = 64 << 10
	clk := runManager(t, ctx, c, maxSize)
	settle := func() { time.Sleep(150 * time.Millisecond) } // the check a tick starts
	settle()
	clk.Step(crilogs.SizeCheckInterval) // a second size check: the log did not grow
	settle()

	grow(t, path, 2*maxSize)
	for step := time.Duration(0); step+crilogs.StatInterval < crilogs.SizeCheckInterval; step += crilogs.StatInterval {
		clk.Step(crilogs.StatInterval)
		settle()
		if rotatedCount(t, path) != 0 {
			t.Fatalf("a log quiet at the last size check was measured %s after it", step+crilogs.StatInterval)
		}
	}
	clk.Step(crilogs.StatInterval) // a size check is due
	testutil.Eventually(t, 10*time.Second, func() error {
		if rotatedCount(t, path) == 0 {
			return fmt.Errorf("the log passed %d bytes and was not rotated at the next size check", maxSize)
		}
		return nil
	})
}

// countingRuntime counts the ListContainers and ContainerStatus calls it
// passes on.
type countingRuntime struct {
	*cri.Client
	lists, statuses atomic.Int64
}

func (r *countingRuntime) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	r.statuses.Add(1)
	return r.Client.ContainerStatus(ctx, id, verbose)
}

func (r *countingRuntime) ListContainers(ctx context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	r.lists.Add(1)
	return r.Client.ListContainers(ctx, f)
}

// Between two passes the manager lists the running containers only when
// told that containers changed: a node whose containers neither start nor
// stop makes no runtime call between passes (its quiet logs are measured
// each size check all the same), and a container started in between is
// listed at the next size check after ContainersChanged, its log bounded
// from then on.
func TestListsOnlyWhenContainersChange(t *testing.T) {
	c, logDir := startRuntime(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rt := &countingRuntime{Client: c}
	const maxSize = 64 << 10
	clk, m := runManagerOf(t, ctx, rt, maxSize)
	settle := func() { time.Sleep(100 * time.Millisecond) }
	settle()
	if n := rt.lists.Load(); n != 1 {
		t.Fatalf("%d lists at the start, want 1", n)
	}
	// No containers, no change: nothing wakes the manager for half the
	// time to the next pass.
	for step := time.Duration(0); step < crilogs.DefaultMonitorInterval/2; step += crilogs.StatInterval {
		clk.Step(crilogs.StatInterval)
	}
	settle()
	if n := rt.lists.Load(); n != 1 {
		t.Fatalf("%d lists before the first pass with no change, want 1", n)
	}

	path := startQuiet(t, c, logDir, "late")
	m.ContainersChanged()
	// The last list was more than a size check ago: the change lists now.
	testutil.Until(t, 5*time.Second, "a list after the change", func() bool { return rt.lists.Load() == 2 })
	// The new log is known: past MaxSize, it is rotated at the next size
	// check, and still with no list.
	grow(t, path, 2*maxSize)
	clk.Step(crilogs.SizeCheckInterval)
	testutil.Eventually(t, 10*time.Second, func() error {
		r, err := crilogs.RotatedFiles(path)
		if err != nil {
			return err
		}
		if len(r) == 0 {
			return fmt.Errorf("the log passed %d bytes and was not rotated at the next size check", maxSize)
		}
		return nil
	})
	if n := rt.lists.Load(); n != 2 {
		t.Fatalf("%d lists, want 2 (the start and the change)", n)
	}
}

// A pass asks a container's log path once, when the container is new (a
// node of 100 quiet pods made 600 ContainerStatus calls a minute for it),
// and has the runtime create again a current file that is missing.
func TestRotateLogsAsksPathOnceAndReopensMissing(t *testing.T) {
	c, logDir := startRuntime(t)
	ctx := context.Background()
	path := startQuiet(t, c, logDir, "once")
	rt := &countingRuntime{Client: c}
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m, err := crilogs.NewManager(rt, crilogs.Policy{MaxSize: 64 << 10, MaxFiles: 4}, time.Second, clk)
	if err != nil {
		t.Fatal(err)
	}
	for pass := 1; pass <= 3; pass++ {
		if err := m.RotateLogs(ctx); err != nil {
			t.Fatal(err)
		}
		if n := rt.statuses.Load(); n != 1 {
			t.Fatalf("after %d passes over one container: %d ContainerStatus calls, want 1", pass, n)
		}
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := m.RotateLogs(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the pass did not have the runtime create the missing log again: %v", err)
	}
}
