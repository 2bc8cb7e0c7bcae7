package kuberuntime

import (
	"context"
	"sort"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// Two agents sharing one runtime: each lists (and so adopts or kills as
// orphans) only the pods it created, never the other's.
func TestGetPodsOnlyListsThisNodesPods(t *testing.T) {
	e := newEnv(t)
	other := NewManager(e.rt, Options{
		PodLogsDir: t.TempDir(), PodsDir: t.TempDir(), HostIP: "10.0.0.2",
		Clock: clocktesting.NewFakeClock(time.Now()), NodeName: "node-2",
	})
	e.m.opts.NodeName = "node-1"

	mine, theirs := newPod("mine", "app"), newPod("theirs", "app")
	if err := e.sync(t, mine, nil).Error(); err != nil {
		t.Fatalf("SyncPod mine: %v", err)
	}
	st, err := other.GetPodStatus(context.Background(), theirs.UID, theirs.Name, theirs.Namespace)
	if err != nil {
		t.Fatalf("GetPodStatus theirs: %v", err)
	}
	if err := other.SyncPod(context.Background(), theirs, st, nil).Error(); err != nil {
		t.Fatalf("SyncPod theirs: %v", err)
	}

	for _, tc := range []struct {
		name string
		m    *Manager
		all  bool
		want string
	}{
		{"node-1 running", e.m, false, "mine"},
		{"node-1 all", e.m, true, "mine"},
		{"node-2 running", other, false, "theirs"},
		{"node-2 all", other, true, "theirs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods, err := tc.m.GetPods(context.Background(), tc.all)
			if err != nil {
				t.Fatalf("GetPods: %v", err)
			}
			var names []string
			for _, p := range pods {
				names = append(names, p.Name)
				if len(p.Sandboxes) != 1 || len(p.Containers) != 1 {
					t.Errorf("pod %s: %d sandboxes, %d containers, want 1 and 1", p.Name, len(p.Sandboxes), len(p.Containers))
				}
			}
			sort.Strings(names)
			if len(names) != 1 || names[0] != tc.want {
				t.Errorf("GetPods = %v, want [%s]", names, tc.want)
			}
		})
	}

	// Without a node name (one agent per runtime) every pod is listed.
	e.m.opts.NodeName = ""
	pods, err := e.m.GetPods(context.Background(), true)
	if err != nil {
		t.Fatalf("GetPods: %v", err)
	}
	if len(pods) != 2 {
		t.Errorf("GetPods without a node name = %d pods, want 2", len(pods))
	}
}
