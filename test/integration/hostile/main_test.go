package hostile

import (
	"testing"

	"github.com/actorlet/actorlet/cri/procruntime"
	"github.com/actorlet/actorlet/test/testutil"
)

func TestMain(m *testing.M) {
	procruntime.MaybeRunShim()
	testutil.Main(m, "")
}
