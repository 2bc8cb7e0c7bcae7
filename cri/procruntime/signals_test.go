package procruntime_test

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// ignoredSignals reads the mask of the signals process pid ignores.
func ignoredSignals(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatalf("SigIgn of %d: %v", pid, err)
			}
			return mask
		}
	}
	t.Fatalf("no SigIgn in /proc/%d/status", pid)
	return 0
}

// The agent may be started with signals ignored (nohup ignores SIGHUP, a
// shell's background job SIGINT and SIGQUIT), and an ignored signal stays
// ignored across exec. A pod's processes still get every signal's default
// action, as under any runtime: the container's process, and a tty exec's
// shell, which ends when its client goes (the terminal hangs up).
// Isolated, the shim and the exec wrapper start them; without isolation
// an exec runs from the agent's process itself (an agent under nohup ran
// tty execs that outlived their client).
func TestSignalsTheAgentIgnoresAreDefaultInPods(t *testing.T) {
	for _, isolated := range []bool{true, false} {
		t.Run(fmt.Sprintf("isolated=%v", isolated), func(t *testing.T) {
			sigs := []os.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT}
			signal.Ignore(sigs...)
			t.Cleanup(func() { signal.Reset(sigs...) })
			e := newEnv
			if isolated {
				e = newIsolatedEnv
			}
			checkSignalsDefaultInPods(t, e(t))
		})
	}
}

func checkSignalsDefaultInPods(t *testing.T, e *env) {
	const mask = 1<<(syscall.SIGHUP-1) | 1<<(syscall.SIGINT-1) | 1<<(syscall.SIGQUIT-1)
	sb, cfg := e.runSandbox("signals", nil)
	id := e.run(sb, cfg, containerConfig("c", nil, "sleep", "63"))
	pid, _ := e.pids(id)
	if ign := ignoredSignals(t, pid); ign&mask != 0 {
		t.Errorf("the container's process ignores signals %#x (SigIgn %#x), want none of HUP, INT, QUIT", ign&mask, ign)
	}
	out := e.execOut(id, "grep", "SigIgn", "/proc/self/status")
	if ign, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(out, "SigIgn:")), 16, 64); err != nil || ign&mask != 0 {
		t.Errorf("an exec'd process ignores signals the agent ignores: %q (%v)", out, err)
	}

	e.ttyExecEndsWithItsClient(t, id) // with SIGHUP ignored by the agent
}
