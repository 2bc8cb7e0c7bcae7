package procruntime

import (
	"os"
	"os/signal"
	"syscall"
)

// inheritedIgnores are the signals a parent may leave ignored for the
// agent: nohup ignores SIGHUP, a shell's background job SIGINT and
// SIGQUIT, some service managers SIGPIPE.
var inheritedIgnores = []os.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGPIPE}

// DefaultSignalsForChildren makes the processes this one starts get the
// default action of every signal in inheritedIgnores, as a container's
// processes do under any runtime. An ignored signal stays ignored across
// exec; a caught one reverts to its default. So each one ignored here is
// caught instead and dropped: this process still ignores it, what it
// starts does not. Without it, an agent started under nohup ran exec -it
// shells that outlived their session (the terminal's hang-up was ignored)
// and containers deaf to SIGHUP. Calling it again does nothing: a signal
// caught here is no longer ignored.
func DefaultSignalsForChildren() {
	var ignored []os.Signal
	for _, s := range inheritedIgnores {
		if signal.Ignored(s) {
			ignored = append(ignored, s)
		}
	}
	if len(ignored) == 0 {
		return
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, ignored...)
	go func() {
		for range ch {
		}
	}()
}
