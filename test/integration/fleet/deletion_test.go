package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/test/testutil"
)

// testKeyDeletedDuringGracefulDeletion: a pod whose container ignores
// SIGTERM has terminationGracePeriodSeconds 9223372037 (the first value
// that overflowed time.Duration) and is deleted gracefully with it: the
// container keeps running after its SIGTERM (before the clamp it was
// killed after about a second). Deleting its desired key then (an
// immediate deletion, grace 0) shortens the grace period: the container is
// gone within seconds (before, the key deletion kept the pod's grace).
func testKeyDeletedDuringGracefulDeletion(t *testing.T, f *fleet) {
	n := f.startNode(t, "gr-n1", nil, nil)
	dir := t.TempDir()
	script := `trap "echo got-term" TERM; while true; do sleep 1; done`
	manifest := strings.Replace(podYAML("slowstop", script), "terminationGracePeriodSeconds: 5", "terminationGracePeriodSeconds: 9223372037", 1)
	file := testutil.WriteFile(t, dir, "slowstop.yaml", manifest)
	f.mustCtl(t, "apply", "-f", file, "--node", n.name, "--wait", "--wait-timeout", "40s")

	out := f.mustCtl(t, "delete", "pod", "slowstop", "--node", n.name)
	if !strings.Contains(out, "grace period 9223372037s") {
		t.Fatalf("delete output = %q, want the pod's grace period", out)
	}
	// The kill is under way once the container got its SIGTERM.
	eventually(t, waitFor, func() error {
		r := f.ctl(t, "logs", "slowstop", "--node", n.name)
		if r.code != 0 || !strings.Contains(r.stdout, "got-term") {
			return fmt.Errorf("no SIGTERM seen in the running container yet: %s", r)
		}
		return nil
	})
	// A few seconds into a grace period of 292 years (clamped to 100), the
	// container still runs.
	time.Sleep(3 * time.Second)
	if got := n.runningContainers("default", "slowstop"); len(got) != 1 {
		t.Fatalf("runtime runs %d containers of slowstop 3 s into its graceful deletion, want 1", len(got))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.desired(t).Delete(ctx, wire.DesiredNodeKey(n.name, "default", "slowstop")); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitFor, func() error {
		if got := n.runningContainers("default", "slowstop"); len(got) != 0 {
			return fmt.Errorf("runtime still runs %d containers of slowstop after its key was deleted", len(got))
		}
		return nil
	})
	f.waitGone(t, n.name, "default", "slowstop")
}

// testUIDChangedInPlace: the value of a desired key changes UID in place (a
// node that missed a delete and re-create sees just that). As the kubelet
// does for a new UID, the old pod is killed (its container, sandbox and
// shim gone), the new pod starts, and the status carries the new UID.
// Deleting the key afterwards leaves nothing. Before, the new UID was
// rejected as DuplicatePod and the old pod ran on, forever.
func testUIDChangedInPlace(t *testing.T, f *fleet) {
	n := f.startNode(t, "uid-n1", nil, nil)
	marker := fmt.Sprintf("uid-change-%d", time.Now().UnixNano())
	t.Cleanup(func() { testutil.KillAll(testutil.ProcsWithArgPrefix(marker)) })
	key := wire.DesiredNodeKey(n.name, "default", "reborn")
	put := func(uid, tag string) {
		t.Helper()
		grace := int64(5)
		pod := v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "reborn", Namespace: "default", UID: types.UID(uid)},
			Spec: v1.PodSpec{
				TerminationGracePeriodSeconds: &grace,
				Containers: []v1.Container{{
					Name:  "app",
					Image: "busybox:1.36",
					// The marker rides as $0 of the shell, so /proc tells
					// which pod a process belongs to.
					Command: []string{"sh", "-c", `trap "exit 0" TERM; while true; do sleep 1; done`, marker + "-" + tag},
				}},
			},
		}
		value, err := json.Marshal(pod)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := f.desired(t).Put(ctx, key, value); err != nil {
			t.Fatal(err)
		}
	}

	put("11111111-aaaa-4000-8000-000000000001", "old")
	p := f.waitRunning(t, n.name, "default", "reborn")
	if p.UID != "11111111-aaaa-4000-8000-000000000001" {
		t.Fatalf("status UID = %s, want the first one", p.UID)
	}
	if ps := testutil.Leaders(testutil.ProcsWithArg(marker + "-old")); len(ps) != 1 {
		t.Fatalf("old pod has %d processes, want 1", len(ps))
	}

	put("22222222-bbbb-4000-8000-000000000002", "new")
	f.waitPod(t, n.name, "default", "reborn", "running with the new UID", func(p *v1.Pod) bool {
		return isRunning(p) && p.UID == "22222222-bbbb-4000-8000-000000000002"
	})
	eventually(t, waitFor, func() error {
		if ps := testutil.ProcsWithArg(marker + "-old"); len(ps) != 0 {
			return fmt.Errorf("the old pod's process still runs: %v", ps)
		}
		if ps := testutil.Leaders(testutil.ProcsWithArg(marker + "-new")); len(ps) != 1 {
			return fmt.Errorf("the new pod has %d processes, want 1", len(ps))
		}
		for _, s := range n.sandboxes("default", "reborn") {
			if uid := s.Labels["io.kubernetes.pod.uid"]; uid != "22222222-bbbb-4000-8000-000000000002" {
				return fmt.Errorf("sandbox %s of UID %s (%s) remains", s.Id, uid, s.State)
			}
		}
		return nil
	})
	// The status stays the new pod's (the old pod's end must not overwrite
	// or delete it).
	if p := f.getPod(t, n.name, "default", "reborn"); !isRunning(p) || p.UID != "22222222-bbbb-4000-8000-000000000002" {
		t.Fatalf("status after the old pod ended: uid %v %s", p.GetUID(), testutil.PodSummary(p))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.desired(t).Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	f.waitGone(t, n.name, "default", "reborn")
	eventually(t, waitFor, func() error {
		if ps := testutil.ProcsWithArgPrefix(marker); len(ps) != 0 {
			return fmt.Errorf("processes left after the key was deleted: %v", ps)
		}
		if sbs := n.sandboxes("default", "reborn"); len(sbs) != 0 {
			return fmt.Errorf("%d sandboxes left after the key was deleted", len(sbs))
		}
		shims, _ := filepath.Glob(filepath.Join(n.runtimeDir, "containers", "*"))
		if len(shims) != 0 {
			return fmt.Errorf("container state left: %v", shims)
		}
		return nil
	})
	if ps := testutil.ProcsWithEnvPrefix("ACTORLET_PROCRUNTIME_SHIM=" + n.runtimeDir); len(ps) != 0 {
		t.Errorf("shims left: %v", ps)
	}
}
