package cri

import (
	"fmt"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// A flood of exit and OOM events keeps at most maxTaskExits of each, the
// newest; entries older than taskExitTTL are dropped.
func TestTaskExitsBounded(t *testing.T) {
	var x taskExits
	now := time.Unix(1000, 0)
	for i := 0; i < 3*maxTaskExits; i++ {
		id := fmt.Sprintf("c%d", i)
		x.exited(id, 1, now, now.Add(time.Duration(i)*time.Microsecond))
		x.oomKilled(id, now.Add(time.Duration(i)*time.Microsecond))
	}
	if len(x.exits.m) > maxTaskExits || len(x.ooms.m) > maxTaskExits || len(x.exits.order) > maxTaskExits {
		t.Fatalf("%d exits (%d queued), %d OOMs held, want at most %d", len(x.exits.m), len(x.exits.order), len(x.ooms.m), maxTaskExits)
	}
	last := fmt.Sprintf("c%d", 3*maxTaskExits-1)
	s := &runtimeapi.ContainerStatus{Id: last, State: runtimeapi.ContainerState_CONTAINER_RUNNING}
	x.status(s)
	if s.State != runtimeapi.ContainerState_CONTAINER_EXITED || s.Reason != reasonOOMKilled {
		t.Errorf("newest exit dropped: %v", s)
	}
	first := &runtimeapi.ContainerStatus{Id: "c0", State: runtimeapi.ContainerState_CONTAINER_RUNNING}
	x.status(first)
	if first.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("oldest exit kept beyond the bound: %v", first)
	}

	x.exited("late", 0, now, now.Add(taskExitTTL+time.Hour))
	if len(x.exits.m) != 1 {
		t.Errorf("%d exits held after the TTL passed, want only the new one", len(x.exits.m))
	}

	// The same container put again is kept by its newest put, not dropped
	// with its first.
	var y taskExits
	y.exited("again", 1, now, now)
	y.exited("again", 2, now, now.Add(taskExitTTL))
	y.exited("other", 1, now, now.Add(taskExitTTL+time.Second))
	if e, ok := y.exits.get("again"); !ok || e.status != 2 {
		t.Errorf("re-put exit: %v, %v; want status 2 kept", e, ok)
	}
}
