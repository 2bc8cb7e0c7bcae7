package actorcore

import (
	"fmt"
	"sort"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// A container that keeps crashing goes into CrashLoopBackOff with the
// kubelet's schedule: the first restart at once, then after 10 s, then
// after 20 s. The runtime's creation times of the instances show the gaps
// growing; the published status shows the waiting reason and the restart
// count climbing.
func TestCrashLoopBackOffDelaysGrow(t *testing.T) {
	t.Parallel()
	start := time.Now()
	e := newEnv(t, envOptions{})
	e.apply(e.pod("crasher", shell("app", "echo crashing; exit 3")))

	// Dead instances are garbage-collected (the newest two are kept), so
	// record every instance while polling, far more often than it restarts.
	created := map[string]time.Time{}
	sawBackOff := false
	eventually(t, 60*time.Second, func() error {
		cs, err := e.containers("crasher")
		if err != nil {
			return err
		}
		for _, c := range cs {
			created[c.Id] = time.Unix(0, c.CreatedAt)
		}
		if p, err := e.podStatus("crasher"); err == nil && len(p.Status.ContainerStatuses) == 1 {
			st := p.Status.ContainerStatuses[0]
			if w := st.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" && st.RestartCount >= 1 {
				sawBackOff = true
			}
		}
		if len(created) < 4 {
			return fmt.Errorf("%d instances so far", len(created))
		}
		return nil
	})
	times := make([]time.Time, 0, len(created))
	for _, c := range created {
		times = append(times, c)
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	gaps := []time.Duration{times[1].Sub(times[0]), times[2].Sub(times[1]), times[3].Sub(times[2])}
	t.Logf("gaps between starts: %v", gaps)
	if !(gaps[0] < gaps[1] && gaps[1] < gaps[2]) {
		t.Errorf("gaps between restarts %v do not grow", gaps)
	}
	// The back-off runs from the previous instance's exit, which follows its
	// start: a gap is at least the back-off.
	if gaps[1] < 10*time.Second || gaps[2] < 20*time.Second {
		t.Errorf("gaps %v, want the 2nd ≥ 10s and the 3rd ≥ 20s (back-off 10s doubling)", gaps)
	}
	if !sawBackOff {
		t.Error("the status never showed waiting reason CrashLoopBackOff during a back-off")
	}
	// The fourth instance died too: waiting out a 40 s back-off with three
	// restarts and the last exit on record.
	p := e.waitPod("crasher", 15*time.Second, func(p *v1.Pod) error {
		if len(p.Status.ContainerStatuses) != 1 {
			return fmt.Errorf("%d container statuses", len(p.Status.ContainerStatuses))
		}
		st := p.Status.ContainerStatuses[0]
		if w := st.State.Waiting; w == nil || w.Reason != "CrashLoopBackOff" || st.RestartCount != 3 {
			return fmt.Errorf("not in CrashLoopBackOff after 3 restarts")
		}
		return nil
	})
	st := p.Status.ContainerStatuses[0]
	if last := st.LastTerminationState.Terminated; last == nil || last.ExitCode != 3 {
		t.Errorf("lastState.terminated = %+v, want exit code 3", last)
	}
	if p.Status.Phase != v1.PodRunning {
		t.Errorf("phase = %s, want Running (restartPolicy Always keeps restarting)", p.Status.Phase)
	}
	e.waitEvent("crasher", v1.EventTypeWarning, "BackOff", 5*time.Second)
	t.Logf("wall time %s", time.Since(start).Round(time.Millisecond))
}
