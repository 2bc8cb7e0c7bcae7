package crilogs

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// The kubelet's defaults (--container-log-max-size,
// --container-log-max-files, --container-log-monitor-interval).
const (
	DefaultMaxSize         = 10 << 20
	DefaultMaxFiles        = 5
	DefaultMonitorInterval = 10 * time.Second
	// SizeCheckInterval is how often the known logs (the running
	// containers' at the last list) are measured between two full passes,
	// a stat each and no runtime call: a file outgrows MaxSize by what
	// its container writes in about this long plus the rotation itself,
	// not in a whole monitor interval (a container writing 14 MB/s made
	// 138 MB files of a 10Mi limit). It is also the shortest time between
	// two lists of the running containers that ContainersChanged asks for.
	SizeCheckInterval = time.Second
	// StatInterval is how often, between two size checks, the logs the
	// last check found growing are measured again (a stat each, no runtime
	// call): a container writing 100 MB/s outgrows a 10Mi limit by about
	// this long of output; one that starts writing after a pause is seen
	// at the next size check.
	StatInterval = 200 * time.Millisecond
	// timestampFormat names rotated files (<path>.20060102-150405).
	timestampFormat = "20060102-150405"
)

// errRotatedThisSecond: the log was rotated less than a second ago (the
// rotated file's name holds the second); the next check does it.
var errRotatedThisSecond = errors.New("rotated this second already")

// Runtime is what rotation needs from the container runtime.
type Runtime interface {
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
	ReopenContainerLog(ctx context.Context, containerID string) error
}

// Policy is the rotation policy.
type Policy struct {
	// MaxSize is the size a log file may reach before it is rotated.
	MaxSize int64
	// MaxFiles is how many files a container's log may have, the current
	// one included (at least 2).
	MaxFiles int
}

// Validate checks the policy, naming the flag at fault.
func (p Policy) Validate() error {
	if p.MaxSize <= 0 {
		return fmt.Errorf("--container-log-max-size: %d: must be positive", p.MaxSize)
	}
	if p.MaxFiles < 2 {
		return fmt.Errorf("--container-log-max-files: %d: must be at least 2", p.MaxFiles)
	}
	return nil
}

// Manager rotates the logs of running containers.
type Manager struct {
	rt       Runtime
	policy   Policy
	interval time.Duration
	clock    clock.WithTicker

	mu    sync.Mutex
	known map[string]string // running container ID → log path, from the last pass
	// growing holds the known logs whose last stat found them larger than
	// the one before: only those are measured between two size checks
	// (StatInterval); a log that stopped growing waits for the next size
	// check (SizeCheckInterval), which measures every log.
	growing map[string]bool
	sizes   map[string]int64 // log path → size at its last stat
	pending map[string]bool  // logs whose rotated files wait for compression

	// files is held while a log's rotated files are cleaned up, removed
	// or compressed. A rotation that finds it taken (a compression in the
	// background) only renames and reopens the current file: the rest is
	// done at its next rotation.
	files sync.Mutex
	// async is set while Run runs: rotated files are then compressed by
	// its background goroutine (wake), never on the rotation's path, so a
	// slow compression does not let the current file grow unchecked.
	async atomic.Bool
	wake  chan struct{}
	// changed is signalled by ContainersChanged.
	changed chan struct{}
}

// NewManager returns a manager; Run starts it.
func NewManager(rt Runtime, policy Policy, interval time.Duration, clk clock.WithTicker) (*Manager, error) {
	if rt == nil {
		return nil, errors.New("container log manager: runtime is required")
	}
	if err := policy.Validate(); err != nil {
		return nil, err
	}
	if interval <= 0 {
		interval = DefaultMonitorInterval
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Manager{rt: rt, policy: policy, interval: interval, clock: clk, known: map[string]string{},
		growing: map[string]bool{}, sizes: map[string]int64{}, pending: map[string]bool{}, wake: make(chan struct{}, 1),
		changed: make(chan struct{}, 1)}, nil
}

// Run rotates logs every interval until ctx ends, and in between checks
// their sizes: every known log each SizeCheckInterval, the growing ones
// each StatInterval. The running containers are listed at every pass and,
// at most once a SizeCheckInterval, after ContainersChanged: a node whose
// containers neither start nor stop makes no runtime call between passes,
// and an idle one (no containers) does not wake at all between them.
func (m *Manager) Run(ctx context.Context) {
	m.async.Store(true)
	defer m.async.Store(false)
	compressed := make(chan struct{})
	go func() { defer close(compressed); m.compressLoop(ctx) }()
	defer func() { <-compressed }()
	t := m.clock.NewTicker(m.interval)
	defer t.Stop()
	m.CheckSizes(ctx) // now, not an interval after the agent started
	now := m.clock.Now()
	s := checkSchedule{listed: now, measured: now, statted: now}
	var timer clock.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		var wake <-chan time.Time
		if timer != nil {
			timer.Stop()
			timer = nil
		}
		if d, ok := s.next(m.clock.Now(), m.counts()); ok {
			timer = m.clock.NewTimer(d)
			wake = timer.C()
		}
		select {
		case <-ctx.Done():
			return
		case <-m.changed:
			s.listPending = true
		case <-wake:
		case <-t.C():
			if err := m.RotateLogs(ctx); err != nil && ctx.Err() == nil {
				klog.ErrorS(err, "Failed to rotate container logs")
			}
			now := m.clock.Now()
			s.listed, s.measured, s.statted, s.listPending = now, now, now, false
			continue
		}
		now := m.clock.Now()
		switch s.due(now, m.counts()) {
		case checkList:
			m.CheckSizes(ctx)
			s.listed, s.measured, s.statted, s.listPending = now, now, now, false
		case checkAll:
			m.checkKnown(ctx, true)
			s.measured, s.statted = now, now
		case checkGrowing:
			m.checkKnown(ctx, false)
			s.statted = now
		}
	}
}

// ContainersChanged tells Run that containers started or stopped: it
// lists the running containers again (at most once a SizeCheckInterval),
// so a new container's log is measured from its first second. It never
// blocks.
func (m *Manager) ContainersChanged() {
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

// logCounts is how many logs are known (the running containers' at the
// last list) and how many of them grew at their last measure.
type logCounts struct{ known, growing int }

func (m *Manager) counts() logCounts {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := logCounts{known: len(m.known)}
	for _, path := range m.known {
		if m.growing[path] {
			c.growing++
		}
	}
	return c
}

// checkKind is the check a wake-up of Run does.
type checkKind int

const (
	checkNone    checkKind = iota
	checkList              // list the running containers, measure every log
	checkAll               // measure every known log
	checkGrowing           // measure the known logs that grew
)

// checkSchedule is when Run last listed the containers, measured every
// log and measured the growing ones, and whether a change asks for a list.
type checkSchedule struct {
	listed, measured, statted time.Time
	listPending               bool
}

// dueAt is when each check is next due, by kind (the zero time: not
// without a change, as a list with none pending, or measures with no
// known or no growing log).
func (s checkSchedule) dueAt(c logCounts) map[checkKind]time.Time {
	at := map[checkKind]time.Time{}
	if s.listPending {
		at[checkList] = s.listed.Add(SizeCheckInterval)
	}
	if c.known > 0 {
		at[checkAll] = s.measured.Add(SizeCheckInterval)
	}
	if c.growing > 0 {
		at[checkGrowing] = s.statted.Add(StatInterval)
	}
	return at
}

// due is the check to do at now, the most thorough one that is due.
func (s checkSchedule) due(now time.Time, c logCounts) checkKind {
	at := s.dueAt(c)
	for _, k := range []checkKind{checkList, checkAll, checkGrowing} {
		if t, ok := at[k]; ok && !now.Before(t) {
			return k
		}
	}
	return checkNone
}

// next is how long until the next check is due, false when none will be
// without a change (no pending list and no known log).
func (s checkSchedule) next(now time.Time, c logCounts) (time.Duration, bool) {
	var first time.Time
	for _, t := range s.dueAt(c) {
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	if first.IsZero() {
		return 0, false
	}
	return max(first.Sub(now), 0), true
}

// CheckSizes lists the running containers (one CRI call; a container's
// log path is asked once, when it is new) and rotates the logs that
// reached MaxSize. A container started a moment ago is checked as soon as
// one that ran for an hour.
func (m *Manager) CheckSizes(ctx context.Context) {
	logs, err := m.listLogs(ctx)
	if err != nil {
		if ctx.Err() == nil {
			klog.V(2).InfoS("Failed to list containers for a log size check", "err", err)
		}
		return
	}
	for id, path := range logs {
		if ctx.Err() != nil {
			return
		}
		m.rotateIfFull(ctx, id, path)
	}
}

// listLogs lists the running containers and records their log paths as
// the known logs. A container's path is asked (CRI ContainerStatus) once,
// when the container is new: a container keeps its path for life.
func (m *Manager) listLogs(ctx context.Context) (map[string]string, error) {
	containers, err := m.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	m.mu.Lock()
	was := m.known
	m.mu.Unlock()
	logs := make(map[string]string, len(containers))
	for _, c := range containers {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if c.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		id := c.GetId()
		path, ok := was[id]
		if !ok {
			resp, err := m.rt.ContainerStatus(ctx, id, false)
			if err != nil {
				klog.V(2).InfoS("Failed to get container status for log rotation", "containerID", id, "err", err)
				continue
			}
			path = resp.GetStatus().GetLogPath()
		}
		if path != "" {
			logs[id] = path
		}
	}
	m.setKnown(logs)
	return logs, nil
}

// setKnown records the running containers' log paths a pass found.
func (m *Manager) setKnown(known map[string]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.known = known
	paths := make(map[string]bool, len(known))
	for _, p := range known {
		paths[p] = true
	}
	for p := range m.sizes {
		if !paths[p] {
			delete(m.sizes, p)
			delete(m.growing, p)
		}
	}
}

// measured records a log's size at a stat.
func (m *Manager) measured(path string, size int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	prev, ok := m.sizes[path]
	m.sizes[path] = size
	m.growing[path] = !ok || size > prev
}

// rotateIfFull rotates path when it reached MaxSize (a missing file is
// the full pass's to reopen; one rotated less than a second ago is
// rotated at the next check).
func (m *Manager) rotateIfFull(ctx context.Context, id, path string) {
	info, err := os.Stat(path)
	if err != nil {
		return
	}
	m.measured(path, info.Size())
	if info.Size() < m.policy.MaxSize {
		return
	}
	if err := m.rotateLog(ctx, id, path); err != nil {
		if !errors.Is(err, errRotatedThisSecond) {
			klog.ErrorS(err, "Failed to rotate container log", "containerID", id, "path", path)
		}
		return
	}
	klog.V(2).InfoS("Rotated container log", "containerID", id, "path", path, "size", info.Size())
}

// checkKnown rotates the logs of the containers the last list found that
// reached MaxSize, with no runtime call but the rotation's own reopen:
// every log (all), or only those that were growing: a quiet one (most of
// a node's) costs a stat per size check, not five.
func (m *Manager) checkKnown(ctx context.Context, all bool) {
	m.mu.Lock()
	known := make(map[string]string, len(m.known))
	for id, path := range m.known {
		if all || m.growing[path] {
			known[id] = path
		}
	}
	m.mu.Unlock()
	for id, path := range known {
		if ctx.Err() != nil {
			return
		}
		m.rotateIfFull(ctx, id, path)
	}
}

// RotateLogs looks at every running container once and rotates the logs
// that reached MaxSize; a log whose current file is missing (a rotation
// whose reopen failed) has the runtime create it again. One container's
// failure does not stop the others.
func (m *Manager) RotateLogs(ctx context.Context) error {
	logs, err := m.listLogs(ctx)
	if err != nil {
		return err
	}
	for id, path := range logs {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			if err := m.rt.ReopenContainerLog(ctx, id); err != nil {
				klog.ErrorS(err, "Failed to reopen a missing container log", "containerID", id, "path", path)
			}
			continue
		}
		m.rotateIfFull(ctx, id, path)
	}
	return nil
}

// rotateLog makes room for one more rotated file and rotates the current
// one: the kubelet's order (clean up, remove the excess, compress, rename
// and reopen), except that under Run the compression is done afterwards
// in the background (compressLoop), and that a rotation during a
// compression only renames and reopens.
func (m *Manager) rotateLog(ctx context.Context, id, path string) error {
	if !m.files.TryLock() {
		return m.rotateLatest(ctx, id, path)
	}
	logs, err := m.tidy(path)
	if err == nil && !m.async.Load() {
		// Compress all but the newest rotated file: it may still be
		// written by a runtime that reopens lazily.
		err = compressAllBut(logs, 1)
	}
	m.files.Unlock()
	if err != nil {
		return err
	}
	if err := m.rotateLatest(ctx, id, path); err != nil {
		return err
	}
	if m.async.Load() {
		m.mu.Lock()
		m.pending[path] = true
		m.mu.Unlock()
		select {
		case m.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// tidy removes leftovers of interrupted compressions and the oldest
// rotated files so that, once the current file is rotated, the log has at
// most MaxFiles files; it returns the rotated files left.
func (m *Manager) tidy(path string) ([]string, error) {
	logs, err := RotatedFiles(path)
	if err != nil {
		return nil, err
	}
	if err := removeTmp(path); err != nil {
		return nil, err
	}
	if logs, err = m.cleanupUnused(logs); err != nil {
		return nil, err
	}
	return m.removeExcess(logs)
}

// compressAllBut compresses the rotated files logs (oldest first) but the
// newest keep, which stay plain.
func compressAllBut(logs []string, keep int) error {
	for i, l := range logs {
		if strings.HasSuffix(l, compressSuffix) || i >= len(logs)-keep {
			continue
		}
		if err := compress(l); err != nil {
			return err
		}
	}
	return nil
}

// compressLoop compresses, in the background of Run, the rotated files of
// the logs rotated since it last looked, but the newest two (the one just
// rotated may still be written by a runtime that reopens lazily), as the
// kubelet leaves them.
func (m *Manager) compressLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.wake:
		}
		m.mu.Lock()
		paths := make([]string, 0, len(m.pending))
		for p := range m.pending {
			paths = append(paths, p)
		}
		clear(m.pending)
		m.mu.Unlock()
		for _, p := range paths {
			if ctx.Err() != nil {
				return
			}
			m.files.Lock()
			logs, err := RotatedFiles(p)
			if err == nil {
				err = compressAllBut(logs, 2)
			}
			m.files.Unlock()
			if err != nil {
				klog.ErrorS(err, "Failed to compress rotated container logs", "path", p)
			}
		}
	}
}

func removeTmp(path string) error {
	tmps, err := globFiles(globEscape(path) + ".*" + tmpSuffix)
	if err != nil {
		return err
	}
	for _, t := range tmps {
		if err := os.Remove(t); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", t, err)
		}
	}
	return nil
}

// cleanupUnused removes an uncompressed rotated file whose compressed twin
// exists (a compression interrupted after the rename).
func (m *Manager) cleanupUnused(logs []string) ([]string, error) {
	have := map[string]bool{}
	for _, l := range logs {
		have[l] = true
	}
	out := logs[:0]
	for _, l := range logs {
		if !strings.HasSuffix(l, compressSuffix) && have[l+compressSuffix] {
			if err := os.Remove(l); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("remove %s: %w", l, err)
			}
			continue
		}
		out = append(out, l)
	}
	return out, nil
}

// removeExcess removes the oldest rotated files so that, once the current
// file is rotated, the log has at most MaxFiles files.
func (m *Manager) removeExcess(logs []string) ([]string, error) {
	keep := max(m.policy.MaxFiles-2, 0) // room for the current file and the one rotated now
	i := 0
	for ; i < len(logs)-keep; i++ {
		if err := os.Remove(logs[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("remove %s: %w", logs[i], err)
		}
	}
	return logs[i:], nil
}

// compress gzips path into path.gz (through path.gz.tmp) and removes it.
func compress(path string) error {
	in, err := os.Open(path)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := path + compressSuffix + tmpSuffix
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	// The fastest level: rotation waits for it (the kubelet uses the
	// default level, about three times slower), and a log compresses well
	// anyway.
	zw, err := gzip.NewWriterLevel(out, gzip.BestSpeed)
	if err != nil {
		out.Close()
		return err
	}
	_, err = io.Copy(zw, in)
	err = errors.Join(err, zw.Close(), out.Close())
	if err == nil {
		err = os.Rename(tmp, path+compressSuffix)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("compress %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove %s once compressed: %w", path, err)
	}
	return nil
}

// rotateLatest renames the current file to path.<timestamp> and has the
// runtime reopen the log; if it cannot, the rename is undone so the next
// round tries again.
func (m *Manager) rotateLatest(ctx context.Context, id, path string) error {
	rotated := path + "." + m.clock.Now().Format(timestampFormat)
	if _, err := os.Stat(rotated); err == nil {
		// Rotated already this second (a tiny MaxSize): never overwrite.
		return fmt.Errorf("rotate %s: %s exists, retrying at the next round: %w", path, rotated, errRotatedThisSecond)
	}
	if err := os.Rename(path, rotated); err != nil {
		return fmt.Errorf("rename %s: %w", path, err)
	}
	if err := m.rt.ReopenContainerLog(ctx, id); err != nil {
		if rerr := os.Rename(rotated, path); rerr != nil {
			klog.ErrorS(rerr, "Failed to undo a log rotation", "path", path, "rotated", rotated)
		}
		return fmt.Errorf("reopen log of container %q: %w", id, err)
	}
	return nil
}
