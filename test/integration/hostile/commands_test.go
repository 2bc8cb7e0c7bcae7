package hostile

import (
	"context"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/node/commands"
)

// TestHostileCommands: random bytes and deep nesting on every command
// subject, exec of endless output, a flood of commands beyond the node's
// limit. Every request gets an answer (never a timeout), the flood's
// excess a quick "busy", and pods keep starting meanwhile.
func TestHostileCommands(t *testing.T) {
	e := newEnv(t)
	e.startPod("target")
	base := rss(t)
	nc := e.conn.NC
	c := &wire.Client{NC: nc, Timeout: 20 * time.Second}

	rng := rand.New(rand.NewSource(2))
	bodies := [][]byte{
		nil, []byte("{"), []byte(strings.Repeat("[", 100000)), []byte(`{"name":` + strings.Repeat(`{"a":`, 50000) + `1` + strings.Repeat("}", 50000) + `}`),
		[]byte(`{"name":"` + strings.Repeat("n", 600<<10) + `"}`),
	}
	for i := 0; i < 5; i++ {
		b := make([]byte, rng.Intn(16<<10))
		rng.Read(b)
		bodies = append(bodies, b)
	}
	for _, verb := range wire.Verbs {
		for i, body := range bodies {
			msg, err := nc.Request(wire.CommandSubject(nodeName, verb), body, 10*time.Second)
			if err != nil {
				t.Fatalf("%s with hostile body %d: %v (want an answer)", verb, i, err)
			}
			code := msg.Header.Get(micro.ErrorCodeHeader)
			if verb != wire.VerbPodsList && code == "" {
				t.Errorf("%s with hostile body %d answered %q, want an error", verb, i, msg.Data)
			}
			if len(msg.Header.Get(micro.ErrorHeader)) > 4<<10 {
				t.Errorf("%s with hostile body %d: a %d-byte error description", verb, i, len(msg.Header.Get(micro.ErrorHeader)))
			}
		}
	}

	// Endless output: cut by the runtime (4 MiB) and to the reply's size.
	ctx := context.Background()
	resp, err := c.Exec(ctx, nodeName, wire.ExecRequest{Name: "target", Command: []string{"head", "-c", "50000000", "/dev/zero"}, TimeoutSeconds: 30})
	if err != nil || !resp.Truncated || len(resp.Stdout) == 0 {
		t.Fatalf("exec of 50 MB of output = %v (truncated %v); want a truncated reply", err, resp != nil && resp.Truncated)
	}

	// A flood: far more execs than the node serves at once.
	const flood = commands.MaxConcurrentCommands * 3
	var wg sync.WaitGroup
	var mu sync.Mutex
	busy, ok, other := 0, 0, []string{}
	start := time.Now()
	for i := 0; i < flood; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Exec(ctx, nodeName, wire.ExecRequest{Name: "target", Command: []string{"sleep", "2"}, TimeoutSeconds: 20})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case wire.ErrorCode(err) == wire.CodeBusy:
				busy++
			default:
				other = append(other, err.Error())
			}
		}()
	}
	// Pods keep starting during the flood.
	e.putPod(pod("during-flood"))
	wg.Wait()
	t.Logf("flood of %d execs: %d ran, %d busy, %d other errors, in %v", flood, ok, busy, len(other), time.Since(start).Round(time.Millisecond))
	if busy == 0 || ok == 0 || len(other) > 0 {
		t.Errorf("flood of %d execs: %d ran, %d busy, other errors %q; want some run, the excess busy, nothing else", flood, ok, busy, other)
	}
	e.waitRunning("during-flood")
	e.waitRunning("target")
	checkRSS(t, base, "after the hostile commands")
}
