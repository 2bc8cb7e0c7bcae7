package actorutil

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

type ping struct{}
type pong struct{ n int }
type tick struct{}

func TestGoAndTick(t *testing.T) {
	sys := actor.NewActorSystem()
	t.Cleanup(sys.Shutdown)
	got := make(chan any, 10)
	clk := clocktesting.NewFakeClock(time.Now())
	stop := make(chan struct{})
	defer close(stop)
	pid := sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case *ping:
			Go(To(ctx), func() any { return &pong{n: 7} })
			Tick(clk, time.Second, To(ctx), &tick{}, stop)
		case *pong, *tick:
			got <- m
		}
	}))
	sys.Root.Send(pid, &ping{})
	if p, ok := (<-got).(*pong); !ok || p.n != 7 {
		t.Fatalf("Go sent %#v", p)
	}
	for i := 0; i < 2; i++ {
		for !clk.HasWaiters() {
			time.Sleep(time.Millisecond)
		}
		clk.Step(time.Second)
		if _, ok := (<-got).(*tick); !ok {
			t.Fatal("no tick")
		}
	}
}

func TestAsk(t *testing.T) {
	sys := actor.NewActorSystem()
	t.Cleanup(sys.Shutdown)
	pid := sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(*ping); ok {
			ctx.Respond(&pong{n: 1})
		}
	}))
	ctx := context.Background()
	if p, err := Ask[*pong](ctx, sys.Root, pid, &ping{}); err != nil || p.n != 1 {
		t.Fatalf("Ask = %v, %v", p, err)
	}
	if _, err := Ask[*tick](ctx, sys.Root, pid, &ping{}); err == nil || !strings.Contains(err.Error(), "answered *actorutil.pong") {
		t.Fatalf("Ask with the wrong reply type: %v", err)
	}
	silent := sys.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := Ask[*pong](short, sys.Root, silent, &ping{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Ask of a silent actor: %v", err)
	}
}

// timerOnly is a clock without AfterFunc: After waits on a timer itself.
type timerOnly struct{ *clocktesting.FakeClock }

func (timerOnly) AfterFunc() {} // hides the fake clock's AfterFunc

func TestAfterFiresOnceUnlessCanceled(t *testing.T) {
	for _, tc := range []struct {
		name string
		clk  func(*clocktesting.FakeClock) clock.Clock
	}{
		{"clock with AfterFunc", func(f *clocktesting.FakeClock) clock.Clock { return f }},
		{"clock with timers only", func(f *clocktesting.FakeClock) clock.Clock { return timerOnly{f} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := clocktesting.NewFakeClock(time.Now())
			clk := tc.clk(fake)
			if _, ok := clk.(clock.WithDelayedExecution); ok == (tc.name != "clock with AfterFunc") {
				t.Fatalf("%s: WithDelayedExecution = %v", tc.name, ok)
			}
			fired := make(chan string, 10)
			After(clk, 2*time.Second, func() { fired <- "kept" })
			cancel := After(clk, 2*time.Second, func() { fired <- "canceled" })
			cancel()
			cancel() // twice is fine
			fake.Step(time.Second)
			select {
			case f := <-fired:
				t.Fatalf("%s fired a second early", f)
			case <-time.After(20 * time.Millisecond):
			}
			fake.Step(time.Second)
			if f := <-fired; f != "kept" {
				t.Fatalf("fired %s, want kept", f)
			}
			fake.Step(time.Hour)
			select {
			case f := <-fired:
				t.Fatalf("%s fired again or after its cancel", f)
			case <-time.After(20 * time.Millisecond):
			}
			After(clk, -time.Second, func() { fired <- "due" })
			fake.Step(0) // a fake clock fires what is due when it is stepped
			if f := <-fired; f != "due" {
				t.Fatalf("fired %s, want due", f)
			}
		})
	}
}
