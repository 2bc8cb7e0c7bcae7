// Package imagegc is the kubelet's image garbage collection
// (pkg/kubelet/images/image_gc_manager.go) on a CRI runtime:
//
//   - Detection lists the runtime's images and every container (running or
//     not): an image any container references is in use and its last use
//     is now; a new image is first seen now; the agent also marks an image
//     used when it creates a container from it (MarkUsed). Records live in
//     memory, as the kubelet's: after a restart every image is first seen
//     anew.
//   - With a maximum age set, an unused image not used (or, never used,
//     not seen) for longer is removed, once the agent has run that long.
//   - When the image filesystem's usage (100 - available*100/capacity, from
//     statfs of the mountpoint CRI ImageFsInfo names) reaches the high
//     threshold, unused images are removed until the low threshold is
//     reached: never used ones first, then least recently used, ties by
//     first seen; never one in use, pinned, or first seen less than the
//     minimum age ago.
package imagegc

import (
	"fmt"
	"time"
)

// Policy is the kubelet's image GC settings.
type Policy struct {
	// HighThresholdPercent of image filesystem usage starts a collection
	// (--image-gc-high-threshold, 85; 100 turns collection by usage off).
	HighThresholdPercent int
	// LowThresholdPercent is what a collection frees down to
	// (--image-gc-low-threshold, 80).
	LowThresholdPercent int
	// MinAge is the least time an image is kept after it is first seen
	// (--image-minimum-gc-age, 2m).
	MinAge time.Duration
	// MaxAge removes images unused for longer (--image-maximum-gc-age;
	// 0: off).
	MaxAge time.Duration
}

// DefaultPolicy is the kubelet's defaults.
func DefaultPolicy() Policy {
	return Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 2 * time.Minute}
}

// Validate checks the policy as the kubelet checks its configuration,
// naming the flag at fault.
func (p Policy) Validate() error {
	switch {
	case p.HighThresholdPercent < 0 || p.HighThresholdPercent > 100:
		return fmt.Errorf("image-gc-high-threshold: %d must be between 0 and 100, inclusive", p.HighThresholdPercent)
	case p.LowThresholdPercent < 0 || p.LowThresholdPercent > 100:
		return fmt.Errorf("image-gc-low-threshold: %d must be between 0 and 100, inclusive", p.LowThresholdPercent)
	case p.LowThresholdPercent >= p.HighThresholdPercent:
		return fmt.Errorf("image-gc-low-threshold: %d must be less than image-gc-high-threshold %d", p.LowThresholdPercent, p.HighThresholdPercent)
	case p.MinAge < 0:
		return fmt.Errorf("image-minimum-gc-age: must not be negative, got %s", p.MinAge)
	case p.MaxAge < 0:
		return fmt.Errorf("image-maximum-gc-age: must not be negative, got %s", p.MaxAge)
	case p.MaxAge != 0 && p.MaxAge < p.MinAge:
		return fmt.Errorf("image-maximum-gc-age: %s must be greater than image-minimum-gc-age %s", p.MaxAge, p.MinAge)
	}
	return nil
}
