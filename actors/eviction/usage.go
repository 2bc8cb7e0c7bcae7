package eviction

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"k8s.io/apimachinery/pkg/types"
)

// maxUsageEntries bounds the directory entries one reading walks to
// measure the pods' emptyDirs and logs; a reading's time is bound by its
// context (statsTimeout).
const maxUsageEntries = 1 << 20

// container returns the stats of the named container, added when new.
func (p *PodStats) container(name string) *ContainerStats {
	for i := range p.Containers {
		if p.Containers[i].Name == name {
			return &p.Containers[i]
		}
	}
	p.Containers = append(p.Containers, ContainerStats{Name: name})
	return &p.Containers[len(p.Containers)-1]
}

// localStorage adds the pods' emptyDir usage (PodsDir) and their
// containers' log usage (PodLogsDir). A walk cut short by the entry limit
// or the reading's deadline leaves what it counted (a lower bound: a pod
// found over its limit on it is over it) and says so in the error.
func (n NodeStats) localStorage(ctx context.Context, s *Stats) error {
	w := &usageWalker{ctx: ctx, left: maxUsageEntries}
	var errs []error
	if n.PodsDir != "" {
		if err := w.emptyDirs(n.PodsDir, s); err != nil {
			errs = append(errs, err)
		}
	}
	if n.PodLogsDir != "" {
		if err := w.logs(n.PodLogsDir, s); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// usageWalker measures directories within one reading's bounds.
type usageWalker struct {
	ctx  context.Context
	left int // entries the reading may still visit
}

// errWalkCut stops a walk at the reading's bounds.
var errWalkCut = errors.New("walk cut")

// readDir lists dir within the bounds (a missing dir is empty; a
// directory that does not fit in what is left is not listed).
func (w *usageWalker) readDir(dir string) ([]os.DirEntry, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(entries) > w.left || w.ctx.Err() != nil {
		w.left = 0
		return nil, w.bounded(dir)
	}
	w.left -= len(entries)
	return entries, nil
}

// bounded is the error of a walk stopped at dir.
func (w *usageWalker) bounded(dir string) error {
	if err := w.ctx.Err(); err != nil {
		return fmt.Errorf("local storage usage: measuring %s: %w (a reading is bound to %s); usage counted so far kept", dir, err, statsTimeout)
	}
	return fmt.Errorf("local storage usage: measuring %s: more than %d files and directories in one reading (the limit); usage counted so far kept", dir, maxUsageEntries)
}

// du is the disk space of the files under dir (allocated blocks, as du)
// and the inodes they use.
func (w *usageWalker) du(dir string) (n, inodes uint64, err error) {
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone meanwhile, or unreadable: not counted
		}
		if w.left <= 0 || w.ctx.Err() != nil {
			return errWalkCut
		}
		w.left--
		inodes++
		if fi, err := d.Info(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				n += uint64(st.Blocks) * 512
			} else {
				n += uint64(fi.Size())
			}
		}
		return nil
	})
	if errors.Is(err, errWalkCut) {
		return n, inodes, w.bounded(dir)
	}
	return n, inodes, err
}

// emptyDirs measures <podsDir>/<uid>/volumes/emptydir/<name>.
func (w *usageWalker) emptyDirs(podsDir string, s *Stats) error {
	pods, err := w.readDir(podsDir)
	if err != nil {
		return fmt.Errorf("local storage usage: %w", err)
	}
	for _, p := range pods {
		if !p.IsDir() {
			continue
		}
		base := filepath.Join(podsDir, p.Name(), "volumes", "emptydir")
		vols, err := w.readDir(base)
		if err != nil {
			return fmt.Errorf("local storage usage: %w", err)
		}
		if len(vols) == 0 {
			continue
		}
		uid := types.UID(p.Name())
		ps := s.Pods[uid]
		if ps.Volumes == nil {
			ps.Volumes, ps.VolumeInodes = map[string]uint64{}, map[string]uint64{}
		}
		for _, v := range vols {
			used, inodes, err := w.du(filepath.Join(base, v.Name()))
			ps.Volumes[v.Name()], ps.VolumeInodes[v.Name()] = used, inodes
			if err != nil {
				s.Pods[uid] = ps
				return err
			}
		}
		s.Pods[uid] = ps
	}
	return nil
}

// logs measures <logsDir>/<ns>_<name>_<uid>/<container>/, the pod's UID
// being the part after the last '_' (names and namespaces have none).
func (w *usageWalker) logs(logsDir string, s *Stats) error {
	pods, err := w.readDir(logsDir)
	if err != nil {
		return fmt.Errorf("local storage usage: %w", err)
	}
	for _, p := range pods {
		i := strings.LastIndexByte(p.Name(), '_')
		if !p.IsDir() || i < 0 || i == len(p.Name())-1 {
			continue
		}
		uid := types.UID(p.Name()[i+1:])
		dir := filepath.Join(logsDir, p.Name())
		containers, err := w.readDir(dir)
		if err != nil {
			return fmt.Errorf("local storage usage: %w", err)
		}
		ps := s.Pods[uid]
		for _, c := range containers {
			if !c.IsDir() {
				continue
			}
			used, inodes, err := w.du(filepath.Join(dir, c.Name()))
			cs := ps.container(c.Name())
			cs.Logs += used
			cs.LogsInodes += inodes
			if err != nil {
				s.Pods[uid] = ps
				return err
			}
		}
		if len(ps.Containers) > 0 || len(ps.Volumes) > 0 {
			s.Pods[uid] = ps
		}
	}
	return nil
}
