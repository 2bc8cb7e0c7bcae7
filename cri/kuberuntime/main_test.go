package kuberuntime

import (
	"os"
	"testing"

	"github.com/actorlet/actorlet/cri/procruntime"
)

// TestMain lets the process runtime re-execute this test binary as its
// per-container shim.
func TestMain(m *testing.M) {
	procruntime.MaybeRunShim()
	os.Exit(m.Run())
}
