package supervisor

import (
	"testing"

	"github.com/actorlet/actorlet/test/testutil"
)

// TestMain keeps klog quiet unless the tests run with -v.
func TestMain(m *testing.M) { testutil.Main(m, "") }
