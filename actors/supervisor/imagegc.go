package supervisor

import (
	"context"

	"github.com/asynkron/protoactor-go/actor"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/actors/actorutil"
	"github.com/actorlet/actorlet/cri/imagegc"
)

// ImageGC collects unused images (cri/imagegc.Manager).
type ImageGC interface {
	GarbageCollect(ctx context.Context) (imagegc.Result, error)
}

type (
	// imageGCTick starts an image collection.
	imageGCTick struct{}
	// imageGCDone is a collection's outcome.
	imageGCDone struct {
		res imagegc.Result
		err error
	}
)

// collectImages runs one image collection in a goroutine (it lists,
// stats and removes through the runtime), one at a time.
func (s *supervisor) collectImages(ctx actor.Context) {
	if s.imageGCRunning {
		klog.V(4).InfoS("Image garbage collection still running, skipping this tick")
		return
	}
	s.imageGCRunning = true
	gc, life := s.cfg.ImageGC, s.life
	actorutil.Go(actorutil.To(ctx), func() any {
		res, err := gc.GarbageCollect(life)
		return &imageGCDone{res: res, err: err}
	})
}

// imageGCDone logs what a collection did or failed to do (the kubelet's
// FreeDiskSpaceFailed, as a log line: node events have no pod to name).
func (s *supervisor) imageGCDone(m *imageGCDone) {
	s.imageGCRunning = false
	if len(m.res.Removed) > 0 {
		klog.InfoS("Image garbage collection removed images", "images", m.res.Removed, "freedBytes", m.res.Freed, "usagePercent", m.res.UsagePercent)
	}
	if m.err != nil && s.life.Err() == nil {
		klog.ErrorS(m.err, "Image garbage collection failed", "usagePercent", m.res.UsagePercent, "wantedBytes", m.res.Wanted, "freedBytes", m.res.Freed)
	}
}
