package imagegc

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/distribution/reference"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/actorlet/actorlet/node/hostfs"
)

// Runtime is what image GC needs from a CRI runtime. cri.Client and the
// upstream fakes satisfy it.
type Runtime interface {
	ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
	RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
}

// FsStats is the image filesystem's size and free space, in bytes (and
// its inodes, unused here).
type FsStats = hostfs.Stats

// Options configure a Manager.
type Options struct {
	Policy Policy
	// Clock is the time images are first seen, used and collected at
	// (default: the real clock).
	Clock clock.PassiveClock
	// FsStats, when set, replaces statfs of the image filesystem's
	// mountpoint (tests inject usage this way, not by filling a disk).
	FsStats func(ctx context.Context, mountpoint string) (FsStats, error)
	// Pinned are images never collected, by a name (tag or digest) or ID,
	// beside those the runtime reports pinned: the runtime's sandbox
	// (pause) image, which containerd before 1.7 does not pin, and which
	// no container lists as its image. Without it no pod could start
	// where no registry serves it again.
	Pinned []string
}

// Manager keeps the image records and collects images. It is safe for
// concurrent use; collections run one at a time.
type Manager struct {
	rt      Runtime
	opts    Options
	started time.Time
	running sync.Mutex // held by the collection in flight

	pinned map[string]bool // Options.Pinned

	mu      sync.Mutex
	records map[string]*record // by image ID
}

// record is what the manager knows of an image.
type record struct {
	firstDetected time.Time
	lastUsed      time.Time // zero: never seen in use
	size          uint64
	pinned        bool
	name          string // for logs: a tag or digest, else the ID
}

// Result is what one collection did.
type Result struct {
	// UsagePercent is the image filesystem's usage before the collection.
	UsagePercent int
	// Removed are the images removed (their names), Freed their bytes.
	Removed []string
	Freed   uint64
	// Wanted is how many bytes the thresholds asked to free (0: under the
	// high threshold).
	Wanted uint64
}

// New returns a manager; the policy must be valid.
func New(rt Runtime, opts Options) (*Manager, error) {
	if err := opts.Policy.Validate(); err != nil {
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.FsStats == nil {
		opts.FsStats = statfs
	}
	pinned := map[string]bool{}
	for _, n := range opts.Pinned {
		for _, alias := range imageAliases(n) {
			pinned[alias] = true
		}
	}
	return &Manager{rt: rt, opts: opts, started: opts.Clock.Now(), pinned: pinned, records: map[string]*record{}}, nil
}

// statfs reads the size and free space of the filesystem holding path.
func statfs(_ context.Context, path string) (FsStats, error) { return hostfs.Stat(path) }

// MarkUsed records that a container was just created from the image (its
// ID): the agent's own tracking of last use, between detections.
func (m *Manager) MarkUsed(imageID string) {
	if imageID == "" {
		return
	}
	now := m.opts.Clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.records[imageID]
	if r == nil {
		r = &record{firstDetected: now, name: imageID}
		m.records[imageID] = r
	}
	r.lastUsed = now
}

// detect lists the images and the containers, records new images and
// those in use, drops records of images gone, and returns the IDs of the
// images in use.
func (m *Manager) detect(ctx context.Context, now time.Time) (map[string]bool, error) {
	images, err := m.rt.ListImages(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	containers, err := m.rt.ListContainers(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	refs := map[string]bool{}
	for _, c := range containers {
		refs[c.GetImageRef()] = true
		refs[c.GetImage().GetImage()] = true
	}
	delete(refs, "")
	inUse := map[string]bool{}
	current := map[string]bool{}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, img := range images {
		id := img.GetId()
		if id == "" {
			continue
		}
		current[id] = true
		r := m.records[id]
		if r == nil {
			r = &record{firstDetected: now}
			m.records[id] = r
		}
		r.size, r.pinned, r.name = img.GetSize(), img.GetPinned() || used(img, m.pinned), imageName(img)
		if used(img, refs) {
			inUse[id] = true
			r.lastUsed = now
		}
	}
	for id := range m.records {
		if !current[id] {
			delete(m.records, id)
		}
	}
	return inUse, nil
}

// imageAliases are the names a runtime may list image n under: as given,
// and as the fully qualified reference a short Docker Hub name stands for
// ("busybox" is docker.io/library/busybox:latest).
func imageAliases(n string) []string {
	out := []string{n}
	if ref, err := reference.ParseNormalizedNamed(n); err == nil {
		out = append(out, reference.TagNameOnly(ref).String())
	}
	return out
}

// used reports whether a container references the image by ID, tag or
// digest.
func used(img *runtimeapi.Image, refs map[string]bool) bool {
	if refs[img.GetId()] {
		return true
	}
	for _, n := range append(append([]string(nil), img.GetRepoTags()...), img.GetRepoDigests()...) {
		if refs[n] {
			return true
		}
	}
	return false
}

func imageName(img *runtimeapi.Image) string {
	if len(img.GetRepoTags()) > 0 {
		return img.GetRepoTags()[0]
	}
	if len(img.GetRepoDigests()) > 0 {
		return img.GetRepoDigests()[0]
	}
	return img.GetId()
}

// candidate is an image that may be removed.
type candidate struct {
	id string
	record
}

// candidates returns the images neither in use nor pinned, in eviction
// order: never used first, then least recently used, ties by first seen.
func (m *Manager) candidates(inUse map[string]bool) []candidate {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []candidate
	for id, r := range m.records {
		if inUse[id] || r.pinned {
			continue
		}
		out = append(out, candidate{id: id, record: *r})
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].lastUsed.Equal(out[j].lastUsed) {
			return out[i].lastUsed.Before(out[j].lastUsed)
		}
		if !out[i].firstDetected.Equal(out[j].firstDetected) {
			return out[i].firstDetected.Before(out[j].firstDetected)
		}
		return out[i].id < out[j].id
	})
	return out
}

// GarbageCollect runs one collection: images past the maximum age, then,
// over the high threshold, images down to the low threshold. It returns
// what it did and an error when it could not free what the thresholds
// asked (naming both amounts, as the kubelet's FreeDiskSpaceFailed).
func (m *Manager) GarbageCollect(ctx context.Context) (Result, error) {
	m.running.Lock()
	defer m.running.Unlock()
	now := m.opts.Clock.Now()
	var res Result
	images, err := m.unused(ctx, now)
	if err != nil {
		return res, err
	}
	var errs []error

	// Maximum age: only once the agent has run that long, else every
	// image would look unused since it started.
	if p := m.opts.Policy; p.MaxAge > 0 && now.Sub(m.started) > p.MaxAge {
		kept := images[:0]
		for _, img := range images {
			last := img.lastUsed
			if last.IsZero() {
				last = img.firstDetected
			}
			if now.Sub(last) <= p.MaxAge {
				kept = append(kept, img)
				continue
			}
			if err := m.remove(ctx, img, "age", &res); err != nil {
				if !errors.Is(err, errUsedMeanwhile) {
					errs = append(errs, err)
				}
				kept = append(kept, img)
			}
		}
		images = kept
	}

	fsInfo, err := m.rt.ImageFsInfo(ctx)
	if err != nil {
		return res, errors.Join(append(errs, fmt.Errorf("image filesystem info: %w", err))...)
	}
	fss := fsInfo.GetImageFilesystems()
	if len(fss) == 0 || fss[0].GetFsId().GetMountpoint() == "" {
		return res, errors.Join(append(errs, errors.New("image filesystem info: the runtime names no image filesystem mountpoint"))...)
	}
	st, err := m.opts.FsStats(ctx, fss[0].GetFsId().GetMountpoint())
	if err != nil {
		return res, errors.Join(append(errs, err)...)
	}
	if st.Capacity == 0 {
		return res, errors.Join(append(errs, fmt.Errorf("invalid capacity 0 on image filesystem %s", fss[0].GetFsId().GetMountpoint()))...)
	}
	if st.Available > st.Capacity {
		st.Available = st.Capacity
	}
	res.UsagePercent = 100 - int(st.Available*100/st.Capacity)
	p := m.opts.Policy
	if p.HighThresholdPercent >= 100 || res.UsagePercent < p.HighThresholdPercent {
		return res, errors.Join(errs...)
	}
	target := st.Capacity * uint64(100-p.LowThresholdPercent) / 100
	if target <= st.Available {
		return res, errors.Join(errs...)
	}
	res.Wanted = target - st.Available
	klog.InfoS("Disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold",
		"usage", res.UsagePercent, "highThreshold", p.HighThresholdPercent, "amountToFree", res.Wanted, "lowThreshold", p.LowThresholdPercent)
	var freed uint64
	for _, img := range images {
		if m.young(img, now) {
			continue
		}
		if err := m.remove(ctx, img, "space", &res); err != nil {
			if !errors.Is(err, errUsedMeanwhile) {
				errs = append(errs, err)
			}
			continue
		}
		freed += img.size
		if freed >= res.Wanted {
			break
		}
	}
	if freed < res.Wanted {
		errs = append(errs, fmt.Errorf("failed to garbage collect required amount of images: attempted to free %d bytes, but only found %d bytes eligible to free", res.Wanted, freed))
	}
	return res, errors.Join(errs...)
}

// DeleteUnusedImages removes every image no container references that
// is neither pinned nor younger than the minimum age, whatever the
// thresholds (the kubelet's DeleteUnusedImages: the eviction manager's
// reclaim before it evicts a pod for disk pressure). It returns what it
// removed and the removals that failed.
func (m *Manager) DeleteUnusedImages(ctx context.Context) (Result, error) {
	m.running.Lock()
	defer m.running.Unlock()
	klog.InfoS("Attempting to delete unused images")
	images, err := m.unused(ctx, m.opts.Clock.Now())
	if err != nil {
		return Result{}, err
	}
	var res Result
	var errs []error
	now := m.opts.Clock.Now()
	for _, img := range images {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		if m.young(img, now) {
			continue
		}
		if err := m.remove(ctx, img, "reclaim", &res); err != nil && !errors.Is(err, errUsedMeanwhile) {
			errs = append(errs, err)
		}
	}
	return res, errors.Join(errs...)
}

// unused detects the images in use at now and returns the others, in
// eviction order.
func (m *Manager) unused(ctx context.Context, now time.Time) ([]candidate, error) {
	inUse, err := m.detect(ctx, now)
	if err != nil {
		return nil, err
	}
	return m.candidates(inUse), nil
}

// young reports (and logs) an image first seen less than the minimum age
// before now: it is kept.
func (m *Manager) young(img candidate, now time.Time) bool {
	if age := now.Sub(img.firstDetected); age < m.opts.Policy.MinAge {
		klog.V(5).InfoS("Image younger than the minimum GC age, kept", "image", img.name, "age", age, "minAge", m.opts.Policy.MinAge)
		return true
	}
	return false
}

// errUsedMeanwhile: a container was created from the image since the
// candidates were listed; it is kept.
var errUsedMeanwhile = errors.New("used meanwhile")

// remove removes one image and forgets it, unless a container was created
// from it since it was listed (then it returns errUsedMeanwhile).
func (m *Manager) remove(ctx context.Context, img candidate, reason string, res *Result) error {
	m.mu.Lock()
	r := m.records[img.id]
	usedMeanwhile := r != nil && !r.lastUsed.Equal(img.lastUsed)
	m.mu.Unlock()
	if usedMeanwhile {
		return errUsedMeanwhile
	}
	klog.InfoS("Removing unused image", "image", img.name, "imageID", img.id, "size", img.size, "reason", reason, "lastUsed", img.lastUsed, "firstDetected", img.firstDetected)
	if err := m.rt.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: img.id}); err != nil {
		return fmt.Errorf("remove image %s (%s): %w", img.name, img.id, err)
	}
	m.mu.Lock()
	delete(m.records, img.id)
	m.mu.Unlock()
	res.Removed = append(res.Removed, img.name)
	res.Freed += img.size
	return nil
}
