package kuberuntime

import (
	"testing"

	"github.com/actorlet/actorlet/cri/procruntime/proctest"
)

// TestMain lets the process runtime re-execute this test binary as its
// per-container shim.
func TestMain(m *testing.M) { proctest.Main(m) }
