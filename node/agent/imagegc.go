package agent

import (
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/cri/imagegc"
)

// startImageGC makes the image garbage collector the supervisor runs
// periodically, or returns nil when the runtime cannot report its image
// filesystem (the in-memory runtime of tests) or the policy turns it off.
func (a *Agent) startImageGC() (*imagegc.Manager, error) {
	p := a.cfg.ImageGCPolicy()
	rt, ok := a.runtime.(imagegc.Runtime)
	if !ok {
		klog.InfoS("Image garbage collection off: the runtime does not report its image filesystem")
		return nil, nil
	}
	if p.HighThresholdPercent >= 100 && p.MaxAge == 0 {
		klog.InfoS("Image garbage collection off: image-gc-high-threshold is 100 and image-maximum-gc-age 0")
		return nil, nil
	}
	m, err := imagegc.New(rt, imagegc.Options{Policy: p})
	if err != nil {
		return nil, err
	}
	klog.InfoS("Image garbage collection on", "highThreshold", p.HighThresholdPercent, "lowThreshold", p.LowThresholdPercent,
		"minimumAge", p.MinAge, "maximumAge", p.MaxAge)
	return m, nil
}
