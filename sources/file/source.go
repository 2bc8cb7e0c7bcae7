// Package file is the static pod source (the kubelet's --pod-manifest-path):
// every *.yaml, *.yml or *.json file in a directory holds one Pod, which the
// node runs without any control plane.
//
// The source sends a full SET snapshot of the directory when it starts
// (even an empty one: that makes the source ready), then again after every
// change fsnotify reports (debounced) and on a periodic rescan that catches
// what the watch missed (a directory recreated, a network filesystem).
package file

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/record"
)

// Defaults.
const (
	DefaultRescan = 30 * time.Second
	debounce      = 100 * time.Millisecond
)

// Config configures a file source.
type Config struct {
	// Dir is the manifest directory; it is created when missing.
	Dir string
	// NodeName names static pods (<name>-<node>) and goes in spec.nodeName.
	NodeName string
	// Out receives every snapshot; it must not block.
	Out func(messages.PodUpdate)
	// Recorder, optional, gets a FailedValidation event per bad manifest.
	Recorder record.EventRecorder
	// Rescan is the safety-net full rescan period (default 30 s).
	Rescan time.Duration
	// Clock drives the rescan and debounce timers (default real time).
	Clock clock.WithTicker

	// noWatch disables fsnotify so tests can prove the rescan alone works.
	noWatch bool
}

// Source watches a manifest directory. Stop it when done.
type Source struct {
	cfg     Config
	cancel  context.CancelFunc
	done    chan struct{}
	stop    sync.Once
	watcher *fsnotify.Watcher
	watched bool

	// cache of parsed manifests by path, keyed by content hash, so an
	// unchanged bad file is reported once, not on every rescan.
	cache map[string]cached
}

type cached struct {
	sum [sha256.Size]byte
	pod *v1.Pod
	err error
}

// Start validates cfg, sends the first snapshot and watches Dir until ctx
// ends or Stop is called.
func Start(ctx context.Context, cfg Config) (*Source, error) {
	switch {
	case cfg.Dir == "":
		return nil, errors.New("file source: Dir is required")
	case cfg.NodeName == "":
		return nil, errors.New("file source: NodeName is required")
	case cfg.Out == nil:
		return nil, errors.New("file source: Out is required")
	case cfg.Rescan < 0:
		return nil, fmt.Errorf("file source: Rescan %v must not be negative", cfg.Rescan)
	}
	if cfg.Rescan == 0 {
		cfg.Rescan = DefaultRescan
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		// Not fatal: the rescan keeps trying and the directory is used
		// once it appears.
		klog.ErrorS(err, "Cannot create static pod directory, will retry", "path", cfg.Dir)
	}
	s := &Source{cfg: cfg, done: make(chan struct{}), cache: map[string]cached{}}
	if !cfg.noWatch {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			return nil, fmt.Errorf("file source: create watcher: %w", err)
		}
		s.watcher = w
		s.ensureWatch()
	}
	ctx, s.cancel = context.WithCancel(ctx)
	ticker := cfg.Clock.NewTicker(cfg.Rescan)
	s.scanAndSend("start")
	go s.run(ctx, ticker)
	return s, nil
}

// Stop ends the watch and waits for the source's goroutine to exit.
func (s *Source) Stop() {
	s.stop.Do(func() {
		s.cancel()
		<-s.done
	})
}

func (s *Source) run(ctx context.Context, ticker clock.Ticker) {
	defer close(s.done)
	defer ticker.Stop()
	if s.watcher != nil {
		defer s.watcher.Close()
	}
	var events <-chan fsnotify.Event
	var errs <-chan error
	if s.watcher != nil {
		events, errs = s.watcher.Events, s.watcher.Errors
	}
	var pending clock.Timer
	var fire <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			if pending != nil {
				pending.Stop()
			}
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			klog.V(5).InfoS("Static pod directory changed", "path", ev.Name, "op", ev.Op.String())
			if ev.Name == filepath.Clean(s.cfg.Dir) && ev.Has(fsnotify.Remove|fsnotify.Rename) {
				s.watched = false
			}
			if pending == nil {
				pending = s.cfg.Clock.NewTimer(debounce)
				fire = pending.C()
			}
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			klog.ErrorS(err, "Static pod directory watch failed", "path", s.cfg.Dir)
		case <-fire:
			pending, fire = nil, nil
			s.scanAndSend("change")
		case <-ticker.C():
			s.ensureWatch()
			s.scanAndSend("rescan")
		}
	}
}

// ensureWatch (re)adds the directory to the watcher when it is not watched
// (not yet created, or deleted and recreated).
func (s *Source) ensureWatch() {
	if s.watcher == nil || s.watched {
		return
	}
	if err := os.MkdirAll(s.cfg.Dir, 0o755); err != nil {
		return
	}
	if err := s.watcher.Add(s.cfg.Dir); err != nil {
		klog.ErrorS(err, "Cannot watch static pod directory, relying on rescan", "path", s.cfg.Dir)
		return
	}
	s.watched = true
}

// scanAndSend reads the directory and sends its snapshot. A missing
// directory is an empty snapshot; any other read error sends nothing, so a
// transient failure never removes running static pods.
func (s *Source) scanAndSend(why string) {
	pods, err := s.scan()
	if err != nil {
		klog.ErrorS(err, "Cannot read static pod directory", "path", s.cfg.Dir)
		return
	}
	klog.V(4).InfoS("Sending static pod snapshot", "path", s.cfg.Dir, "pods", len(pods), "trigger", why)
	s.cfg.Out(messages.PodUpdate{Op: messages.OpSet, Pods: pods, Source: messages.SourceFile})
}

// scan returns the valid pods of the directory, in file name order.
func (s *Source) scan() ([]*v1.Pod, error) {
	entries, err := os.ReadDir(s.cfg.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		s.cache = map[string]cached{}
		return []*v1.Pod{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read static pod directory %q: %w", s.cfg.Dir, err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	pods := []*v1.Pod{}
	seen := map[string]bool{}
	for _, e := range entries {
		if !isManifest(e.Name()) || !(e.Type().IsRegular() || e.Type()&fs.ModeSymlink != 0) {
			continue
		}
		path := filepath.Join(s.cfg.Dir, e.Name())
		seen[path] = true
		if pod := s.load(path); pod != nil {
			pods = append(pods, pod)
		}
	}
	for path := range s.cache {
		if !seen[path] {
			delete(s.cache, path)
		}
	}
	return pods, nil
}

// load parses one manifest, reporting a bad one once per content.
func (s *Source) load(path string) *v1.Pod {
	data, err := readManifest(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) { // removed while scanning: fine
			klog.ErrorS(err, "Cannot read static pod manifest, skipping", "path", path)
		}
		return nil
	}
	sum := sha256.Sum256(data)
	if c, ok := s.cache[path]; ok && c.sum == sum {
		if c.pod == nil {
			return nil
		}
		return c.pod.DeepCopy()
	}
	pod, err := staticPod(data, s.cfg.NodeName, path)
	s.cache[path] = cached{sum: sum, pod: pod, err: err}
	if err != nil {
		klog.ErrorS(err, "Invalid static pod manifest, skipping", "path", path)
		if s.cfg.Recorder != nil {
			s.cfg.Recorder.Eventf(nil, v1.EventTypeWarning, "FailedValidation",
				"Static pod manifest %s is invalid: %v", filepath.Base(path), err)
		}
		return nil
	}
	klog.V(2).InfoS("Loaded static pod manifest", "path", path, "pod", klog.KObj(pod), "podUID", pod.UID)
	return pod.DeepCopy()
}
