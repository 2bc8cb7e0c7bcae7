//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/test/testutil"
)

// Scenario 3: a crashing container is restarted with the kubelet's
// CrashLoopBackOff delays (at once, then 10 s, then 20 s); restartPolicy
// Never and OnFailure are respected; exit codes are in the status.
func TestRestartPolicyAndCrashLoopBackOff(t *testing.T) {
	a := startAgent(t, agentOptions{})
	host := t.TempDir()

	// Each start of the crashing container appends the time to a host file.
	crash := shPod("crash", "date +%s >> /host/starts; exit 1")
	hostPathType := v1.HostPathDirectory
	crash.Spec.Volumes = []v1.Volume{{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: host, Type: &hostPathType}}}}
	crash.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "host", MountPath: "/host"}}

	withPolicy := func(p *v1.Pod, rp v1.RestartPolicy) *v1.Pod { p.Spec.RestartPolicy = rp; return p }
	a.apply(t,
		crash,
		withPolicy(shPod("never-ok", "exit 0"), v1.RestartPolicyNever),
		withPolicy(shPod("never-fail", "exit 3"), v1.RestartPolicyNever),
		withPolicy(shPod("onfailure-ok", "exit 0"), v1.RestartPolicyOnFailure),
		withPolicy(shPod("onfailure-fail", "exit 7"), v1.RestartPolicyOnFailure),
	)

	terminated := func(p *v1.Pod, code int32, reason string) error {
		cs := containerStatus(p, "main")
		if cs == nil || cs.State.Terminated == nil {
			return fmt.Errorf("container not terminated")
		}
		if cs.State.Terminated.ExitCode != code || cs.State.Terminated.Reason != reason || cs.RestartCount != 0 {
			return fmt.Errorf("terminated %s/%d restarts %d, want %s/%d and no restart",
				cs.State.Terminated.Reason, cs.State.Terminated.ExitCode, cs.RestartCount, reason, code)
		}
		return nil
	}
	finished := func(phase v1.PodPhase, code int32, reason string) func(*v1.Pod) error {
		return func(p *v1.Pod) error {
			if err := hasPhase(phase)(p); err != nil {
				return err
			}
			return terminated(p, code, reason)
		}
	}
	a.waitPod(t, "never-ok", 60*time.Second, finished(v1.PodSucceeded, 0, "Completed"))
	a.waitPod(t, "never-fail", 30*time.Second, finished(v1.PodFailed, 3, "Error"))
	a.waitPod(t, "onfailure-ok", 30*time.Second, finished(v1.PodSucceeded, 0, "Completed"))
	a.waitPod(t, "onfailure-fail", 30*time.Second, func(p *v1.Pod) error {
		cs := containerStatus(p, "main")
		if cs == nil || cs.RestartCount < 1 || cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 7 {
			return fmt.Errorf("want restarted after exit 7")
		}
		return nil
	})

	// Four starts: the first restart at once, then back-offs of 10 s and 20 s
	// measured from each death. Starts are recorded in whole seconds. The pod
	// actor's timer retries when a back-off ends (the kubelet waits for its
	// next 10 s ×[1, 1.5) error requeue), so the gaps are the back-offs plus
	// the time to see the death and start; the bounds allow a loaded machine.
	var starts []int64
	eventually(t, 70*time.Second, func() error {
		b, err := os.ReadFile(filepath.Join(host, "starts"))
		if err != nil {
			return err
		}
		starts = starts[:0]
		for _, f := range strings.Fields(string(b)) {
			s, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				return fmt.Errorf("starts file: %w", err)
			}
			starts = append(starts, s)
		}
		if len(starts) < 4 {
			return fmt.Errorf("%d starts so far: %v", len(starts), starts)
		}
		return nil
	})
	gaps := []int64{starts[1] - starts[0], starts[2] - starts[1], starts[3] - starts[2]}
	if gaps[2] <= gaps[1] {
		t.Errorf("back-off did not grow: gaps %v s", gaps)
	}
	t.Logf("gaps between the first starts: %v s", gaps)
	for i, want := range []struct{ min, max int64 }{{0, 4}, {9, 18}, {19, 32}} {
		if gaps[i] < want.min || gaps[i] > want.max {
			t.Errorf("gap %d between starts = %d s, want %d..%d s (gaps %v)", i+1, gaps[i], want.min, want.max, gaps)
		}
	}
	if t.Failed() {
		// What the agent did with the pod, for a failure seen only in CI.
		var at []string
		for _, s := range starts {
			at = append(at, time.Unix(s, 0).UTC().Format("15:04:05"))
		}
		t.Logf("starts at %v; the agent's log lines about the pod:\n%s", at, a.logGrep(namespace+"/crash", 120))
	}

	p := a.waitPod(t, "crash", 20*time.Second, func(p *v1.Pod) error {
		cs := containerStatus(p, "main")
		if cs == nil || cs.State.Waiting == nil || cs.State.Waiting.Reason != "CrashLoopBackOff" || cs.RestartCount < 3 {
			return fmt.Errorf("want waiting CrashLoopBackOff after 3 restarts")
		}
		return nil
	})
	cs := containerStatus(p, "main")
	if cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 1 {
		t.Errorf("crash: %s, want last exit 1", testutil.PodSummary(p))
	}
	if p.Status.Phase != v1.PodRunning && p.Status.Phase != v1.PodPending {
		t.Errorf("crash: phase %s, want Running or Pending while it restarts", p.Status.Phase)
	}
	if st := a.tableStatus(t, "crash"); st != "CrashLoopBackOff" {
		t.Errorf("crash: STATUS %q, want CrashLoopBackOff", st)
	}

	// Nothing ran again meanwhile under Never / OnFailure-after-success.
	pods, err := a.pods()
	if err != nil {
		t.Fatal(err)
	}
	for name, code := range map[string]int32{"never-ok": 0, "never-fail": 3, "onfailure-ok": 0} {
		if err := terminated(pods[name], code, map[bool]string{true: "Completed", false: "Error"}[code == 0]); err != nil {
			t.Errorf("%s at the end: %v", name, err)
		}
	}
}
