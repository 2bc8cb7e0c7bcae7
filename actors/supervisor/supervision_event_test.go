package supervisor

import (
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlet/actorlet/actors/podactor/fake"
)

// Every supervision decision about a pod actor is published on the actor
// system's event stream, as protoactor's built-in strategies do: the agent
// counts actorlet_actor_restarts_total from these events.
func TestSupervisionDecisionsArePublished(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.WorkerRestarts = 1 })
	var mu sync.Mutex
	var directives []actor.Directive
	sub := h.sys.EventStream.Subscribe(func(evt any) {
		if e, ok := evt.(*actor.SupervisorEvent); ok {
			mu.Lock()
			directives = append(directives, e.Directive)
			mu.Unlock()
		}
	})
	t.Cleanup(func() { h.sys.EventStream.Unsubscribe(sub) })
	seen := func() []actor.Directive {
		mu.Lock()
		defer mu.Unlock()
		return append([]actor.Directive(nil), directives...)
	}

	h.rt.Panic(fake.OpSyncPod, 2)
	h.addRunning("a")
	eventually(t, "restart published", func() bool {
		h.clock.Step(100 * time.Millisecond)
		return len(seen()) >= 1
	})
	eventually(t, "give-up published", func() bool {
		h.clock.Step(100 * time.Millisecond)
		return len(seen()) >= 2
	})
	if d := seen(); d[0] != actor.RestartDirective || d[1] != actor.StopDirective {
		t.Fatalf("published directives = %v, want [Restart Stop]", d)
	}
}
