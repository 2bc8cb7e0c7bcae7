package bus

import (
	"fmt"

	"github.com/nats-io/nats-server/v2/server"
	"k8s.io/klog/v2"
)

// serverLogger routes the embedded nats-server's log through klog. Notices
// are verbose (V(2)): the agent's own log says what matters. A fatal error
// (the client port taken, ...) is also sent on fatal, when set, so the
// start fails at once instead of waiting out the ready timeout.
type serverLogger struct {
	fatal chan<- error
}

var _ server.Logger = serverLogger{}

func (serverLogger) Noticef(format string, v ...any) {
	klog.V(2).InfoS("NATS server notice", "msg", fmt.Sprintf(format, v...))
}

func (serverLogger) Warnf(format string, v ...any) {
	klog.InfoS("NATS server warning", "msg", fmt.Sprintf(format, v...))
}

func (l serverLogger) Fatalf(format string, v ...any) {
	err := fmt.Errorf(format, v...)
	klog.ErrorS(err, "NATS server fatal error")
	if l.fatal != nil {
		select {
		case l.fatal <- err:
		default:
		}
	}
}

func (serverLogger) Errorf(format string, v ...any) {
	klog.ErrorS(fmt.Errorf(format, v...), "NATS server error")
}

func (serverLogger) Debugf(format string, v ...any) {
	klog.V(5).InfoS("NATS server debug", "msg", fmt.Sprintf(format, v...))
}

func (serverLogger) Tracef(format string, v ...any) {
	klog.V(6).InfoS("NATS server trace", "msg", fmt.Sprintf(format, v...))
}
