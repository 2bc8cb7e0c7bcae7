package cluster

import (
	"flag"
	"os"
	"testing"

	"github.com/actorlet/actorlet/cri/procruntime"
	"github.com/actorlet/actorlet/test/testenv"
	"github.com/actorlet/actorlet/test/testutil"
)

// ctlBinary is actorletctl, built once: the quorum-loss scenario checks
// what an operator is told.
var ctlBinary string

func TestMain(m *testing.M) {
	procruntime.MaybeRunShim() // the process runtime's shim (TestEdgeCommandsThroughUplink)
	flag.Parse()
	testutil.QuietKlog("")
	os.Exit(testenv.RunWithActorletctl(m, &ctlBinary))
}
