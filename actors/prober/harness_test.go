package prober

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/actorlet/actorlet/actors/actorutil/actortest"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/test/testutil"
)

// exitErr mimics cri.ExitError: the command ran and exited non-zero.
type exitErr struct{ code int }

func (e *exitErr) Error() string { return fmt.Sprintf("command exited with code %d", e.code) }
func (e *exitErr) ExitCode() int { return e.code }

// execCall is one ExecSync the fake saw.
type execCall struct {
	containerID string
	cmd         string
	at          time.Time
}

// scriptExec is an ExecSync whose exit code per command is set by the test.
type scriptExec struct {
	clock *clocktesting.FakeClock
	mu    sync.Mutex
	codes map[string]int // command → exit code
	calls []execCall
}

func (s *scriptExec) ExecSync(_ context.Context, id string, cmd []string, _ time.Duration) ([]byte, []byte, error) {
	c := strings.Join(cmd, " ")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, execCall{containerID: id, cmd: c, at: s.clock.Now()})
	if code := s.codes[c]; code != 0 {
		return []byte(c + " is unhappy"), nil, &exitErr{code: code}
	}
	return []byte(c + " is fine"), nil, nil
}

func (s *scriptExec) set(cmd string, code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[cmd] = code
}

// count returns how many times cmd ran (in containerID when not empty).
func (s *scriptExec) count(cmd, containerID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if c.cmd == cmd && (containerID == "" || c.containerID == containerID) {
			n++
		}
	}
	return n
}

func (s *scriptExec) callsOf(cmd string) []execCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []execCall
	for _, c := range s.calls {
		if c.cmd == cmd {
			out = append(out, c)
		}
	}
	return out
}

// harness runs a prober manager under a parent actor that records what the
// manager sends up.
type harness struct {
	t       *testing.T
	system  *actor.ActorSystem
	clock   *clocktesting.FakeClock
	exec    *scriptExec
	rec     *testutil.Recorder
	manager *actor.PID

	mu      sync.Mutex
	changes []*messages.ProbeResultChanged
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	h := &harness{
		t:      t,
		system: actortest.System(t),
		clock:  clk,
		exec:   &scriptExec{clock: clk, codes: map[string]int{}},
		rec:    &testutil.Recorder{},
	}
	props, err := Props(Config{Exec: h.exec, Clock: clk, Recorder: h.rec})
	if err != nil {
		t.Fatal(err)
	}
	h.manager = actortest.SpawnChild(t, h.system, props, func(ctx actor.Context) {
		if msg, ok := ctx.Message().(*messages.ProbeResultChanged); ok {
			h.mu.Lock()
			h.changes = append(h.changes, msg)
			h.mu.Unlock()
		}
	})
	return h
}

func (h *harness) send(msg any) { h.system.Root.Send(h.manager, msg) }

// list asks the manager for a pod's probe states.
func (h *harness) list(uid types.UID) []messages.ProbeState {
	h.t.Helper()
	res, err := h.system.Root.RequestFuture(h.manager, &messages.ListProbes{UID: uid}, 5*time.Second).Result()
	if err != nil {
		h.t.Fatalf("ListProbes: %v", err)
	}
	return res.(*messages.ProbeStates).Probes
}

// state returns one probe's state, or false when there is no such worker.
func (h *harness) state(uid types.UID, container string, kind messages.ProbeKind) (messages.ProbeState, bool) {
	for _, st := range h.list(uid) {
		if st.ContainerName == container && st.Kind == kind {
			return st, true
		}
	}
	return messages.ProbeState{}, false
}

// changesOf returns the results reported for one probe, as "id=Result".
func (h *harness) changesOf(container string, kind messages.ProbeKind) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, c := range h.changes {
		if c.ContainerName == container && c.Kind == kind {
			out = append(out, c.ContainerID+"="+c.Result.String())
		}
	}
	return out
}

// eventually polls cond until it holds or 10 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Until(t, 10*time.Second, what, cond)
}

// step advances the fake clock by one period.
func (h *harness) step(d time.Duration) { h.clock.Step(d) }

// waitChanges waits until the probe's reported results equal want.
func (h *harness) waitChanges(container string, kind messages.ProbeKind, want ...string) {
	h.t.Helper()
	eventually(h.t, fmt.Sprintf("%s %s changes %v", container, kind, want), func() bool {
		return fmt.Sprint(h.changesOf(container, kind)) == fmt.Sprint(want)
	})
}

// waitState waits until the probe's state satisfies cond.
func (h *harness) waitState(uid types.UID, container string, kind messages.ProbeKind, what string, cond func(messages.ProbeState) bool) {
	h.t.Helper()
	eventually(h.t, fmt.Sprintf("%s %s: %s", container, kind, what), func() bool {
		st, ok := h.state(uid, container, kind)
		return ok && cond(st)
	})
}

// execProbe is an exec probe running cmd.
func execProbe(cmd string, mod func(*v1.Probe)) *v1.Probe {
	p := &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: strings.Fields(cmd)}}}
	if mod != nil {
		mod(p)
	}
	return p
}

func testPod(uid types.UID, containers ...v1.Container) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: uid},
		Spec:       v1.PodSpec{Containers: containers},
	}
}

// cstate describes one container in a computed status.
type cstate struct {
	name, id  string
	running   bool
	startedAt time.Time
}

func statusOf(pod *v1.Pod, podIP string, cs ...cstate) *messages.PodStatusComputed {
	st := v1.PodStatus{Phase: v1.PodRunning, PodIP: podIP}
	for _, c := range cs {
		s := v1.ContainerStatus{Name: c.name, ContainerID: c.id}
		if c.running {
			s.State.Running = &v1.ContainerStateRunning{StartedAt: metav1.NewTime(c.startedAt)}
		} else {
			s.State.Terminated = &v1.ContainerStateTerminated{ExitCode: 1}
		}
		st.ContainerStatuses = append(st.ContainerStatuses, s)
	}
	return &messages.PodStatusComputed{Pod: pod, Status: st}
}
