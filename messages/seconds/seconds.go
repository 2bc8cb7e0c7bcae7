// Package seconds turns the whole seconds of pod specs, CRI requests and
// bus requests (grace periods, probe delays, periods and timeouts, exec
// and hook timeouts) into time.Durations without overflow.
//
// time.Duration(s) * time.Second overflows int64 nanoseconds for
// s ≥ 9223372037 (about 292 years) and wraps to a negative or tiny
// duration: a container ignoring SIGTERM with such a grace period was
// killed after about a second, and an exec with such a timeout failed at
// once. Every such conversion in actorlet goes through Duration, which
// clamps to [0, Max]: a longer value means "wait practically forever",
// as the user asked, and leaves headroom for the few seconds callers add
// (a call's own timeout on top of a stop timeout).
package seconds

import "time"

// Max is the longest duration any seconds field means: 100 years. Values
// above it are clamped to it.
const Max = 100 * 365 * 24 * time.Hour

// MaxSeconds is Max in whole seconds (3,153,600,000).
const MaxSeconds = int64(Max / time.Second)

// Duration returns s seconds, clamped to [0, Max]: a negative s is 0.
func Duration[T ~int32 | ~int64 | ~int](s T) time.Duration {
	switch {
	case s <= 0:
		return 0
	case int64(s) >= MaxSeconds:
		return Max
	}
	return time.Duration(s) * time.Second
}

// Clamp returns s clamped to [0, MaxSeconds], for seconds passed on as
// seconds (a CRI StopContainer timeout).
func Clamp(s int64) int64 {
	return min(max(s, 0), MaxSeconds)
}
