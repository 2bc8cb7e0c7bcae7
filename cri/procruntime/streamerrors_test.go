package procruntime_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"

	_ "github.com/actorlet/actorlet/cri/procruntime" // installs the filter
	"github.com/actorlet/actorlet/test/testutil"
)

// A port-forward to a closed port is reported to the client, not logged as
// an agent error ("Unhandled Error"); other unhandled errors still are.
func TestPortForwardErrorIsNotAnAgentError(t *testing.T) {
	var buf testutil.SyncBuffer
	klog.LogToStderr(false)
	klog.SetOutput(&buf)
	t.Cleanup(func() {
		klog.SetOutput(os.Stderr)
		klog.LogToStderr(true)
	})
	utilruntime.HandleError(errors.New(`error forwarding port 9 to pod 0123abcd, uid : connect to port 9 of sandbox 0123abcd: dial tcp 127.0.0.1:9: connect: connection refused`))
	utilruntime.HandleError(errors.New("something else broke"))
	klog.Flush()
	out := buf.String()
	if strings.Contains(out, "error forwarding port") {
		t.Errorf("the port-forward error was logged as an agent error:\n%s", out)
	}
	if !strings.Contains(out, "something else broke") || !strings.Contains(out, "Unhandled Error") {
		t.Errorf("other unhandled errors are no longer logged:\n%s", out)
	}
}
