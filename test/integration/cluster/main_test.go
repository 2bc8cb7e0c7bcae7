package cluster

import (
	"testing"

	"github.com/actorlet/actorlet/test/testenv"
)

// ctlBinary is actorletctl, built once: the quorum-loss scenario checks
// what an operator is told.
var ctlBinary string

// TestMain: the process runtime's shim (TestEdgeCommandsThroughUplink),
// quiet klog, actorletctl built.
func TestMain(m *testing.M) { testenv.MainWithActorletctl(m, &ctlBinary) }
