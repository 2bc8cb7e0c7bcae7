package fleet

import (
	"testing"

	"github.com/actorlet/actorlet/test/testenv"
)

// ctlBinary is the actorletctl binary built once for the whole package.
var ctlBinary string

// TestMain lets the test binary serve as the echo server or the process
// runtime's shim when re-executed as one, keeps klog quiet unless -v, and
// builds actorletctl.
func TestMain(m *testing.M) {
	maybeRunEchoServer()
	testenv.MainWithActorletctl(m, &ctlBinary)
}
