package kuberuntime

import (
	"context"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

const (
	// imageStatusTTL is how long one ImageStatus answer serves the
	// containers of a start wave that use the same image: 100 pods of one
	// image read it a few times instead of 100. A pull through the manager
	// forgets the answer at once; a removal by image GC (only of images no
	// container uses) is seen within it, as the next CreateContainer would
	// have seen it anyway.
	imageStatusTTL = 2 * time.Second
	// maxImageStatuses bounds the answers kept; past it (after dropping
	// the expired) a read is not kept.
	maxImageStatuses = 1024
)

// imageStatuses shares ImageStatus reads per image: callers that ask while
// a read is in flight wait for it, and its answer serves for imageStatusTTL.
// Only an image found is kept: an absent one is pulled next (which
// forgets the image anyway) or fails the pod's start (ErrImageNeverPull),
// whose retry must see an image loaded meanwhile. A failed read is neither
// kept nor shared: each waiter then reads itself.
type imageStatuses struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	reads map[string]*imageRead
}

type imageRead struct {
	done chan struct{}
	st   *runtimeapi.ImageStatusResponse
	err  error
	at   time.Time // when the answer came
}

func newImageStatuses(c clock.PassiveClock) *imageStatuses {
	return &imageStatuses{clock: c, reads: map[string]*imageRead{}}
}

// get returns image's status, from a read in flight or a fresh answer if
// there is one, else from read. The answer is shared: callers must not
// change it.
func (s *imageStatuses) get(ctx context.Context, image string, read func() (*runtimeapi.ImageStatusResponse, error)) (*runtimeapi.ImageStatusResponse, error) {
	s.mu.Lock()
	if r, ok := s.reads[image]; ok {
		select {
		case <-r.done:
			if r.err == nil && r.st.GetImage() != nil && s.clock.Since(r.at) < imageStatusTTL {
				s.mu.Unlock()
				return r.st, nil
			}
		default:
			s.mu.Unlock()
			select {
			case <-r.done:
				if r.err == nil {
					return r.st, nil
				}
				// The read failed, perhaps with its caller's context:
				// read for this caller.
				return read()
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	r := &imageRead{done: make(chan struct{})}
	keep := s.makeRoom()
	if keep {
		s.reads[image] = r
	}
	s.mu.Unlock()

	r.st, r.err = read()
	s.mu.Lock()
	r.at = s.clock.Now()
	if (r.err != nil || r.st.GetImage() == nil) && keep && s.reads[image] == r {
		delete(s.reads, image)
	}
	close(r.done)
	s.mu.Unlock()
	return r.st, r.err
}

// forget drops image's answer: a pull changed it.
func (s *imageStatuses) forget(image string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.reads, image) // a read in flight still answers its waiters
}

// makeRoom drops expired answers when the map is full and says whether a
// new one may be kept. s.mu is held.
func (s *imageStatuses) makeRoom() bool {
	if len(s.reads) < maxImageStatuses {
		return true
	}
	for k, r := range s.reads {
		select {
		case <-r.done:
			if s.clock.Since(r.at) >= imageStatusTTL {
				delete(s.reads, k)
			}
		default:
		}
	}
	return len(s.reads) < maxImageStatuses
}
