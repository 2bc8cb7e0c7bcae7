// Package actorutil is the plumbing every actorlet actor needs around
// protoactor: run blocking work off the actor and send the result back (Go),
// tick on an injected clock (Tick), wake up once after a delay unless
// canceled (After), and ask an actor with a typed reply (Ask). Receive
// never blocks: these are the ways work leaves and comes back.
package actorutil

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"k8s.io/utils/clock"
)

// Sender delivers a message to one actor from any goroutine.
type Sender func(msg any)

// To is the Sender to the actor whose Receive is running on ctx; take it in
// Receive, use it anywhere.
func To(ctx actor.Context) Sender {
	root, self := ctx.ActorSystem().Root, ctx.Self()
	return func(msg any) { root.Send(self, msg) }
}

// Go runs fn in a goroutine and sends what it returns with send: the way an
// actor calls something that blocks (CRI, NATS, a probe) and gets the
// result back as a message.
func Go(send Sender, fn func() any) {
	go func() { send(fn()) }()
}

// Tick sends msg with send every period of clk until stop is closed. The
// ticker is made before Tick returns, so a fake clock stepped afterwards
// fires it.
func Tick(clk clock.WithTicker, period time.Duration, send Sender, msg any, stop <-chan struct{}) {
	t := clk.NewTicker(period)
	go func() {
		defer t.Stop()
		for {
			select {
			case <-t.C():
				send(msg)
			case <-stop:
				return
			}
		}
	}()
}

// After runs fn once d has passed on clk, unless the returned cancel is
// called first: the one cancellable one-shot timer of every actor (the end
// of a back-off, an active deadline, a stream retry). fn runs on a
// goroutine of the clock or of its own and must not block (it sends a
// message). A d of zero or less is due at once, as the clock has it: the
// real clock runs fn at once, a fake clock at its next step. cancel may be
// called more than once, from any goroutine; a timer already due may still
// run fn, so what fn sends must tell a stale timer apart (a generation, the
// instant it was armed for).
func After(clk clock.Clock, d time.Duration, fn func()) (cancel func()) {
	d = max(d, 0)
	if dc, ok := clk.(clock.WithDelayedExecution); ok {
		// The real clock and the fake one of tests schedule fn themselves.
		t := dc.AfterFunc(d, fn)
		return func() { t.Stop() }
	}
	t := clk.NewTimer(d)
	stop := make(chan struct{})
	go func() {
		defer t.Stop()
		select {
		case <-t.C():
			fn()
		case <-stop:
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(stop) }) }
}

// DefaultAskTimeout bounds Ask when ctx has no deadline.
const DefaultAskTimeout = 10 * time.Second

// Ask sends req to pid and waits, within ctx's deadline (DefaultAskTimeout
// without one), for a reply of type T. A reply of another type is an
// error naming both; a timeout wraps context.DeadlineExceeded.
func Ask[T any](ctx context.Context, root *actor.RootContext, pid *actor.PID, req any) (T, error) {
	var zero T
	timeout := DefaultAskTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
		if timeout <= 0 {
			return zero, fmt.Errorf("ask %s for %T: %w", pid.Id, req, context.DeadlineExceeded)
		}
	}
	res, err := root.RequestFuture(pid, req, timeout).Result()
	if errors.Is(err, actor.ErrTimeout) {
		return zero, fmt.Errorf("ask %s for %T: %w", pid.Id, req, context.DeadlineExceeded)
	}
	if err != nil {
		return zero, fmt.Errorf("ask %s for %T: %w", pid.Id, req, err)
	}
	reply, ok := res.(T)
	if !ok {
		return zero, fmt.Errorf("ask %s for %T: answered %T, want %T", pid.Id, req, res, zero)
	}
	return reply, nil
}
