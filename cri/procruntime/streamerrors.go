package procruntime

import (
	"context"
	"strings"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
)

// portForwardErrorPrefix starts the error the CRI streaming library reports
// (through utilruntime.HandleError) and sends to the client when a
// port-forward fails: "error forwarding port 9 to pod <sandbox>, uid : ...".
const portForwardErrorPrefix = "error forwarding port "

// A port-forward to a port nothing listens on is the client's mistake, and
// the client is told (on the port-forward's error stream): the streaming
// library would also log it as an agent error ("Unhandled Error"). Such
// errors are logged at V(2) instead; every other unhandled error still goes
// to the library's handlers. Set at init, before any goroutine reads the
// handlers.
func init() {
	next := utilruntime.ErrorHandlers
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{
		func(ctx context.Context, err error, msg string, keysAndValues ...any) {
			if err != nil && strings.HasPrefix(err.Error(), portForwardErrorPrefix) {
				klog.V(2).InfoS("Port-forward failed (the client was told)", "err", err)
				return
			}
			for _, h := range next {
				h(ctx, err, msg, keysAndValues...)
			}
		},
	}
}
