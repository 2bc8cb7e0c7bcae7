// Package actortest holds what the actor packages' tests share: a quiet
// actor system, an actor under test spawned as the child of a parent the
// test listens through, and an inbox that keeps what an actor received.
// Only tests import it.
package actortest

import (
	"log/slog"
	"sync"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
)

// System returns an actor system that discards its own logs; t.Cleanup
// shuts it down.
func System(t testing.TB) *actor.ActorSystem {
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	t.Cleanup(sys.Shutdown)
	return sys
}

// SpawnChild spawns a parent that spawns props as its child once it starts
// and hands every later message (what the child sends up, requests
// included: ctx.Respond answers them) to onMessage, on the parent's
// goroutine. It returns the child; t.Cleanup stops the parent, and with it
// the child, before the system shuts down.
func SpawnChild(t testing.TB, sys *actor.ActorSystem, props *actor.Props, onMessage func(ctx actor.Context)) *actor.PID {
	t.Helper()
	ready := make(chan *actor.PID, 1)
	parent := sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(*actor.Started); ok {
			ready <- ctx.Spawn(props)
			return
		}
		onMessage(ctx)
	}))
	t.Cleanup(func() { _ = sys.Root.StopFuture(parent).Wait() })
	return <-ready
}

// Inbox keeps the messages an actor received, for a test to look at. The
// zero value is ready to use.
type Inbox struct {
	mu  sync.Mutex
	got []any
}

// Add keeps m.
func (in *Inbox) Add(m any) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.got = append(in.got, m)
}

// Receive makes the inbox an actor (actor.PropsFromFunc(in.Receive)) that
// keeps every message but its own lifecycle.
func (in *Inbox) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started, *actor.Stopping, *actor.Stopped, *actor.Restarting:
		return
	}
	in.Add(ctx.Message())
}

// Of returns the messages of type T the inbox kept, oldest first.
func Of[T any](in *Inbox) []T {
	in.mu.Lock()
	defer in.mu.Unlock()
	var out []T
	for _, m := range in.got {
		if v, ok := m.(T); ok {
			out = append(out, v)
		}
	}
	return out
}
