package procruntime

import "time"

// SetShimStartTimeout shortens how long a silent shim is waited for; it
// returns the function restoring the default.
func SetShimStartTimeout(d time.Duration) (restore func()) {
	old := shimStartTimeout.Swap(int64(d))
	return func() { shimStartTimeout.Store(old) }
}
