package procruntime_test

import (
	"context"
	"math"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
)

// A stop timeout of 9223372037 s or more overflowed time.Duration: the
// container, ignoring SIGTERM, was SIGKILLed at once. Now such a timeout
// means "wait practically forever": the stop is still waiting when its
// caller gives up, and the container runs. Through the CRI client (which
// clamps the request) and straight at the server (which clamps too).
func TestStopContainerHugeTimeoutDoesNotKill(t *testing.T) {
	e := newEnv(t)
	id := e.runStubborn("stubborn", "1")
	for _, timeout := range []int64{9223372037, math.MaxInt64} {
		c, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		err := e.c.StopContainer(c, id, timeout)
		cancel()
		if !cri.IsDeadlineExceeded(err) {
			t.Errorf("client StopContainer(timeout %d) = %v, want the caller's deadline while the container ignores TERM", timeout, err)
		}
		c, cancel = context.WithTimeout(context.Background(), 500*time.Millisecond)
		_, err = e.rt.StopContainer(c, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: timeout})
		cancel()
		if err == nil {
			t.Errorf("server StopContainer(timeout %d) returned at once, want it waiting for the grace period", timeout)
		}
		if st := e.status(id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			t.Fatalf("after StopContainer(timeout %d) the container is %s (exit %d), want RUNNING", timeout, st.State, st.ExitCode)
		}
	}
}

// An exec timeout of 9223372037 s or more made ExecSync fail at once.
func TestExecSyncHugeTimeout(t *testing.T) {
	e := newEnv(t)
	sbID, sb := e.runSandbox("exec-huge", nil)
	id := e.run(sbID, sb, containerConfig("sleeper", nil, "sleep", "30"))
	for _, timeout := range []int64{9223372037, math.MaxInt64, -1} {
		resp, err := e.rt.ExecSync(ctx(t), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"echo", "hi"}, Timeout: timeout})
		if err != nil || resp.ExitCode != 0 || string(resp.Stdout) != "hi\n" {
			t.Errorf("ExecSync(timeout %d) = %v, %v; want hi", timeout, resp, err)
		}
	}
}
