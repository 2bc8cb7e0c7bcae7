package hostile

import (
	"flag"
	"os"
	"testing"

	"github.com/actorlet/actorlet/cri/procruntime"
	"github.com/actorlet/actorlet/test/testutil"
)

func TestMain(m *testing.M) {
	procruntime.MaybeRunShim()
	flag.Parse()
	testutil.QuietKlog("")
	os.Exit(m.Run())
}
