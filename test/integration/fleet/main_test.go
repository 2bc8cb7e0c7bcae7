package fleet

import (
	"flag"
	"os"
	"testing"

	"github.com/actorlet/actorlet/cri/procruntime"
	"github.com/actorlet/actorlet/test/testenv"
	"github.com/actorlet/actorlet/test/testutil"
)

// ctlBinary is the actorletctl binary built once for the whole package.
var ctlBinary string

// TestMain lets the process runtime's shim take over when the test binary is
// re-executed as one, keeps klog quiet unless -v, and builds actorletctl.
func TestMain(m *testing.M) {
	procruntime.MaybeRunShim()
	maybeRunEchoServer()
	flag.Parse()
	testutil.QuietKlog("")
	os.Exit(testenv.RunWithActorletctl(m, &ctlBinary))
}
