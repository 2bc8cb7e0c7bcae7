package supervisor

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/actors/actorutil/actortest"
	"github.com/actorlet/actorlet/actors/podactor/fake"
	"github.com/actorlet/actorlet/messages"
)

func withPriority(p *v1.Pod, prio int32) *v1.Pod {
	p.Spec.Priority = &prio
	return p
}

func TestGroupByPriority(t *testing.T) {
	groups := []messages.ShutdownGroup{{Priority: 0}, {Priority: 1000}, {Priority: 2000000000}}
	pods := []*v1.Pod{
		newPod("none", "none", 1), withPriority(newPod("neg", "neg", 1), -5),
		withPriority(newPod("mid", "mid", 1), 1000), withPriority(newPod("high", "high", 1), 1999999999),
		withPriority(newPod("crit", "crit", 1), 2000001000),
	}
	got := groupByPriority(groups, pods)
	want := [][]string{{"none", "neg"}, {"mid", "high"}, {"crit"}}
	for i := range want {
		var names []string
		for _, p := range got[i] {
			names = append(names, p.Name)
		}
		if len(names) != len(want[i]) || (len(names) > 0 && names[0] != want[i][0]) || (len(names) > 1 && names[1] != want[i][1]) {
			t.Fatalf("group %d = %v, want %v", i, names, want[i])
		}
	}
}

// TestNodeShutdownTerminatesByPriority: the pods are killed lowest
// priority first, each group once the one before is done or its time ran
// out, each pod with the shorter of its own grace period and its group's;
// they end Failed with the kubelet's reason, message and DisruptionTarget;
// new pods are refused and the node reports it is shutting down.
func TestNodeShutdownTerminatesByPriority(t *testing.T) {
	h := newHarness(t, nil)
	low := newPod("low", "low", 1)
	mid := withPriority(newPod("mid", "mid", 2), 1000)
	mid.Spec.TerminationGracePeriodSeconds = int64p(5)
	crit := withPriority(newPod("crit", "crit", 3), 2000000000)
	h.add(low, mid, crit)
	for _, uid := range []types.UID{"low", "mid", "crit"} {
		eventually(t, "pod synced", func() bool { return h.syncsOf(uid) > 0 })
	}
	release := h.rt.Hold(fake.OpKillPod)
	defer release()

	groups := []messages.ShutdownGroup{{Priority: 2000000000, GracePeriodSeconds: 20}, {Priority: 0, GracePeriodSeconds: 10}, {Priority: 1000, GracePeriodSeconds: 10}}
	reply := h.sys.Root.RequestFuture(h.pid, &messages.StartNodeShutdown{Groups: groups}, 30*time.Second)
	eventually(t, "low killed", func() bool { return len(h.killsOf("low")) == 1 })
	if g := h.killsOf("low")[0].Grace; g == nil || *g != 10 {
		t.Fatalf("low killed with grace %v, want 10 (its group's, shorter than its own 30)", g)
	}
	h.never("mid or crit killed while low's group runs", func() bool { return len(h.killsOf("mid"))+len(h.killsOf("crit")) > 0 })
	if _, nc := h.counted("low"); !nc.ShuttingDown {
		t.Fatalf("node conditions do not say shutting down: %+v", nc)
	}
	h.add(newPod("late", "late", 4))
	h.waitRejections("late pod refused", 1)
	if r := actortest.Of[*messages.PodRejected](h.status)[0]; r.Reason != ReasonNodeShutdown || r.Message != messageNodeShutdown {
		t.Fatalf("late pod rejected with %q %q, want %q %q", r.Reason, r.Message, ReasonNodeShutdown, messageNodeShutdown)
	}

	// low's kill hangs: its group's 10 s pass, mid's group starts.
	h.clock.Step(10 * time.Second)
	eventually(t, "mid killed after low's group timed out", func() bool { return len(h.killsOf("mid")) == 1 })
	if g := h.killsOf("mid")[0].Grace; g == nil || *g != 5 {
		t.Fatalf("mid killed with grace %v, want 5 (its own, shorter than its group's 10)", g)
	}
	h.never("crit killed while mid's group runs", func() bool { return len(h.killsOf("crit")) > 0 })

	// The kills finish: mid's group is done, crit's starts at once.
	release()
	eventually(t, "crit killed once mid finished", func() bool { return len(h.killsOf("crit")) == 1 })
	if g := h.killsOf("crit")[0].Grace; g == nil || *g != 20 {
		t.Fatalf("crit killed with grace %v, want 20", g)
	}
	res, err := reply.Result()
	if err != nil {
		t.Fatalf("no NodeShutdownDone: %v", err)
	}
	done := res.(*messages.NodeShutdownDone)
	if done.Terminated != 3 || len(done.Remaining) != 0 || done.Canceled {
		t.Fatalf("done = %+v, want 3 terminated, none remaining", done)
	}
	// Asked again once over: answered at once, nothing more to do.
	if again, ok := h.ask(&messages.StartNodeShutdown{Groups: groups}).(*messages.NodeShutdownDone); !ok || again.Terminated != 0 {
		t.Fatalf("second StartNodeShutdown answered %+v, want an empty NodeShutdownDone", again)
	}
	eventually(t, "final statuses", func() bool {
		n := 0
		for _, m := range actortest.Of[*messages.PodStatusComputed](h.status) {
			if m.Status.Reason == ReasonShutdownTerminated {
				n++
			}
		}
		return n == 3
	})
	for _, m := range actortest.Of[*messages.PodStatusComputed](h.status) {
		if m.Status.Reason != ReasonShutdownTerminated {
			continue
		}
		var target *v1.PodCondition
		for i := range m.Status.Conditions {
			if m.Status.Conditions[i].Type == v1.DisruptionTarget {
				target = &m.Status.Conditions[i]
			}
		}
		if m.Status.Phase != v1.PodFailed || m.Status.Message != MessageShutdownTerminated || target == nil ||
			target.Status != v1.ConditionTrue || target.Reason != v1.PodReasonTerminationByKubelet {
			t.Fatalf("%s final status = %s %q %q %+v, want Failed, the kubelet's message and DisruptionTarget/TerminationByKubelet",
				m.Pod.Name, m.Status.Phase, m.Status.Reason, m.Status.Message, target)
		}
	}
}

// TestNodeShutdownCanceled: a canceled shutdown terminates no further
// group and admits pods again.
func TestNodeShutdownCanceled(t *testing.T) {
	h := newHarness(t, nil)
	h.add(newPod("low", "low", 1), withPriority(newPod("crit", "crit", 2), 2000000000))
	eventually(t, "pods synced", func() bool { return h.syncsOf("low") > 0 && h.syncsOf("crit") > 0 })
	release := h.rt.Hold(fake.OpKillPod)
	defer release()
	reply := h.sys.Root.RequestFuture(h.pid, &messages.StartNodeShutdown{Groups: []messages.ShutdownGroup{{Priority: 0, GracePeriodSeconds: 10}, {Priority: 2000000000, GracePeriodSeconds: 10}}}, 10*time.Second)
	eventually(t, "low killed", func() bool { return len(h.killsOf("low")) == 1 })
	h.send(&messages.CancelNodeShutdown{})
	res, err := reply.Result()
	if err != nil {
		t.Fatalf("no NodeShutdownDone: %v", err)
	}
	if done := res.(*messages.NodeShutdownDone); !done.Canceled {
		t.Fatalf("done = %+v, want canceled", done)
	}
	h.clock.Step(10 * time.Second)
	h.never("crit killed after the cancel", func() bool { return len(h.killsOf("crit")) > 0 })
	if _, nc := h.counted("crit"); nc.ShuttingDown {
		t.Fatal("node still shutting down after the cancel")
	}
	h.add(newPod("after", "after", 3))
	eventually(t, "pod admitted after the cancel", func() bool { return h.syncsOf("after") > 0 })
}
