package hostile

import (
	"testing"

	"github.com/actorlet/actorlet/cri/procruntime/proctest"
)

func TestMain(m *testing.M) { proctest.MainQuiet(m, "") }
