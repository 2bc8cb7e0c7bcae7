package podactor

import (
	"flag"
	"os"
	"testing"

	"github.com/actorlet/actorlet/test/testutil"
)

// TestMain keeps klog quiet unless the tests run with -v.
func TestMain(m *testing.M) {
	flag.Parse()
	testutil.QuietKlog("")
	os.Exit(m.Run())
}
