package actorcore

import (
	"os"
	"testing"

	"github.com/actorlet/actorlet/cri/procruntime/proctest"
)

// TestMain runs container shims (the process runtime re-executes this test
// binary for each container) and keeps klog quiet: with 200 pods the agent
// logs a lot. With -v it logs, at ACTORLET_IT_KLOG=<level> verbosity if set.
func TestMain(m *testing.M) { proctest.MainQuiet(m, os.Getenv("ACTORLET_IT_KLOG")) }
