package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/test/testutil"
)

func TestDelete(t *testing.T) {
	e := newEnv(t)
	grace := int64(20)
	seed := func(key, name string) {
		p := statusPod("default", name, "u-"+name, now)
		p.Spec.TerminationGracePeriodSeconds = &grace
		e.put(wire.DesiredBucket, key, p)
	}
	seed(wire.DesiredNodeKey("n1", "default", "web"), "web")
	seed(wire.DesiredNodeKey("n1", "default", "gone"), "gone")
	seed(wire.DesiredFleetKey("default", "edge"), "edge")
	seed(wire.DesiredNodeKey("n1", "default", "twice"), "twice")
	seed(wire.DesiredNodeKey("n2", "default", "twice"), "twice")

	t.Run("graceful uses the pod's grace period", func(t *testing.T) {
		out := e.mustRun("delete", "pod", "web")
		p := e.pod(wire.DesiredBucket, wire.DesiredNodeKey("n1", "default", "web"))
		if p == nil || p.DeletionTimestamp == nil || !p.DeletionTimestamp.Time.Equal(now) || *p.DeletionGracePeriodSeconds != 20 {
			t.Fatalf("pod after graceful delete: %+v", p)
		}
		if !strings.Contains(out, `pod "web" deleted (grace period 20s)`) {
			t.Fatalf("stdout %q", out)
		}
	})
	t.Run("grace period can only shorten", func(t *testing.T) {
		e.mustRun("delete", "pod", "web", "--grace-period", "5")
		e.mustRun("delete", "pod", "web", "--grace-period", "50")
		if g := *e.pod(wire.DesiredBucket, wire.DesiredNodeKey("n1", "default", "web")).DeletionGracePeriodSeconds; g != 5 {
			t.Fatalf("grace = %d, want 5", g)
		}
	})
	t.Run("now removes the key", func(t *testing.T) {
		e.mustRun("delete", "pod", "gone", "--now")
		if e.pod(wire.DesiredBucket, wire.DesiredNodeKey("n1", "default", "gone")) != nil {
			t.Fatal("key still there")
		}
	})
	t.Run("fleet pod found without flags, grace 0 removes", func(t *testing.T) {
		e.mustRun("delete", "pod", "edge", "--grace-period", "0")
		if e.pod(wire.DesiredBucket, wire.DesiredFleetKey("default", "edge")) != nil {
			t.Fatal("fleet key still there")
		}
	})
	t.Run("ambiguous asks for --node", func(t *testing.T) {
		_, errOut, code := e.run(context.Background(), "", "delete", "pod", "twice")
		if code != 1 || !strings.Contains(errOut, "choose with --node") {
			t.Fatalf("exit %d stderr %q", code, errOut)
		}
		e.mustRun("delete", "pod", "twice", "--node", "n2", "--now")
		if e.pod(wire.DesiredBucket, wire.DesiredNodeKey("n2", "default", "twice")) != nil || e.pod(wire.DesiredBucket, wire.DesiredNodeKey("n1", "default", "twice")) == nil {
			t.Fatal("wrong key deleted")
		}
	})
	t.Run("unknown pod", func(t *testing.T) {
		_, errOut, code := e.run(context.Background(), "", "delete", "pod", "nope", "-n", "x")
		if code != 1 || !strings.Contains(errOut, "pod x/nope not found") {
			t.Fatalf("exit %d stderr %q", code, errOut)
		}
	})
}

func seedStatuses(e *env) {
	web := running(statusPod("default", "web", "u1", now.Add(-90*time.Second)))
	crash := waiting(statusPod("default", "crash", "u2", now.Add(-2*time.Hour)), "CrashLoopBackOff", 4)
	crash.Status.ContainerStatuses[0].LastTerminationState.Terminated = &v1.ContainerStateTerminated{ExitCode: 1, FinishedAt: metav1.NewTime(now.Add(-time.Minute))}
	dns := running(statusPod("kube-system", "dns", "u3", now.Add(-time.Hour)))
	term := running(statusPod("default", "old", "u4", now.Add(-time.Hour)))
	ts := metav1.NewTime(now)
	term.DeletionTimestamp = &ts
	e.put(wire.StatusBucket, wire.StatusKey("n1", "default", "web"), web)
	e.put(wire.StatusBucket, wire.StatusKey("n2", "default", "crash"), crash)
	e.put(wire.StatusBucket, wire.StatusKey("n1", "kube-system", "dns"), dns)
	e.put(wire.StatusBucket, wire.StatusKey("n1", "default", "old"), term)
}

func TestGetPods(t *testing.T) {
	e := newEnv(t)
	seedStatuses(e)
	tests := []struct {
		name    string
		args    []string
		want    []string
		notWant []string
	}{
		{"table", []string{"get", "pods"}, []string{
			"NAME    READY   STATUS             RESTARTS      AGE",
			"crash   0/1     CrashLoopBackOff   4 (60s ago)   120m",
			"old     1/1     Terminating        0             60m",
			"web     1/1     Running            0             90s",
		}, []string{"dns"}},
		{"all namespaces", []string{"get", "pods", "-A"}, []string{"NAMESPACE     NAME", "kube-system   dns"}, nil},
		{"namespace", []string{"get", "pods", "-n", "kube-system"}, []string{"dns"}, []string{"web"}},
		{"node", []string{"get", "pods", "--node", "n2"}, []string{"crash"}, []string{"web"}},
		{"wide", []string{"get", "pods", "-o", "wide"}, []string{"IP", "NODE", "10.0.0.5   n1"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := e.mustRun(tt.args...)
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(out, w) {
					t.Errorf("output has %q:\n%s", w, out)
				}
			}
		})
	}
	t.Run("json", func(t *testing.T) {
		var list struct {
			Kind  string   `json:"kind"`
			Items []v1.Pod `json:"items"`
		}
		if err := json.Unmarshal([]byte(e.mustRun("get", "pods", "-A", "-o", "json")), &list); err != nil {
			t.Fatal(err)
		}
		if list.Kind != "List" || len(list.Items) != 4 || list.Items[0].Name != "crash" {
			t.Fatalf("list = %s with %d items", list.Kind, len(list.Items))
		}
	})
	t.Run("yaml", func(t *testing.T) {
		if out := e.mustRun("get", "pods", "-o", "yaml", "-n", "kube-system"); !strings.Contains(out, "name: dns") {
			t.Fatalf("yaml = %s", out)
		}
	})
	t.Run("watch prints changes", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		out := &testutil.SyncBuffer{}
		c := &cli{stdin: strings.NewReader(""), stdout: out, stderr: &testutil.SyncBuffer{}, clock: testclock.NewFakeClock(now)}
		done := make(chan int, 1)
		go func() { done <- c.main(ctx, []string{"--server", e.url, "get", "pods", "-w", "-n", "kube-system"}) }()
		testutil.Eventually(t, 10*time.Second, func() error {
			if !strings.Contains(out.String(), "dns") {
				return fmt.Errorf("listing not printed yet")
			}
			return nil
		})
		// The listing is out, so the watch is running: a change is printed.
		p := waiting(statusPod("kube-system", "dns", "u3", now.Add(-time.Hour)), "ErrImagePull", 0)
		e.put(wire.StatusBucket, wire.StatusKey("n1", "kube-system", "dns"), p)
		testutil.Eventually(t, 10*time.Second, func() error {
			if !strings.Contains(out.String(), "ErrImagePull") {
				return fmt.Errorf("change not printed:\n%s", out.String())
			}
			return nil
		})
		cancel()
		if code := <-done; code != 0 {
			t.Fatalf("watch exit %d", code)
		}
	})
	t.Run("no pods", func(t *testing.T) {
		_, errOut, code := e.run(context.Background(), "", "get", "pods", "-n", "empty")
		if code != 0 || !strings.Contains(errOut, "No resources found in empty namespace.") {
			t.Fatalf("exit %d stderr %q", code, errOut)
		}
	})
}

func TestGetNodes(t *testing.T) {
	e := newEnv(t)
	e.put(wire.NodesBucket, "fresh", node("fresh", now.Add(-5*time.Second), v1.ConditionTrue))
	e.put(wire.NodesBucket, "stale", node("stale", now.Add(-10*time.Minute), v1.ConditionTrue))
	e.put(wire.NodesBucket, "sick", node("sick", now, v1.ConditionFalse))
	out := e.mustRun("get", "nodes")
	for _, w := range []string{"NAME    STATUS     AGE   VERSION", "fresh   Ready      60m   actorlet-0.1", "sick    NotReady", "stale   NotReady"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	wide := e.mustRun("get", "nodes", "-o", "wide")
	if !strings.Contains(wide, "INTERNAL-IP") || !strings.Contains(wide, "192.168.1.10   Linux") {
		t.Errorf("wide output:\n%s", wide)
	}
	var list v1.List
	if err := json.Unmarshal([]byte(e.mustRun("get", "nodes", "-o", "json")), &list); err != nil || len(list.Items) != 3 {
		t.Fatalf("json: %v, %d items", err, len(list.Items))
	}
}

func TestEvents(t *testing.T) {
	e := newEnv(t)
	publish := func(nodeName, ns, name, reason string, at time.Time) {
		ev := v1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: name + "." + reason, Namespace: ns},
			InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: ns, Name: name},
			Type:           v1.EventTypeNormal, Reason: reason, Message: reason + " happened",
			LastTimestamp: metav1.NewTime(at), Count: 1,
		}
		data, _ := json.Marshal(ev)
		if _, err := e.conn.JS.Publish(context.Background(), wire.EventSubject(nodeName, ns, name), data); err != nil {
			t.Fatal(err)
		}
	}
	publish("n1", "default", "web", "Started", now.Add(-time.Minute))
	publish("n1", "default", "web", "Pulled", now.Add(-2*time.Minute))
	publish("n2", "ops", "job", "Killing", now.Add(-30*time.Second))

	out := e.mustRun("events")
	if !strings.Contains(out, "LAST SEEN   TYPE     REASON    OBJECT    MESSAGE") {
		t.Fatalf("header missing:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.Contains(lines[1], "Pulled") || !strings.Contains(lines[3], "Killing") || !strings.Contains(lines[2], "pod/web") {
		t.Fatalf("events not sorted by time:\n%s", out)
	}
	// A repeat is republished under the same name with a higher count:
	// only its latest copy is listed.
	publish("n1", "default", "web", "Started", now.Add(-10*time.Second))
	if out := e.mustRun("events", "--node", "n1"); strings.Count(out, "Started happened") != 1 {
		t.Fatalf("a repeated event must be listed once:\n%s", out)
	}
	if out := e.mustRun("events", "--node", "n2"); strings.Contains(out, "web") || !strings.Contains(out, "Killing") {
		t.Fatalf("--node n2:\n%s", out)
	}
	if out := e.mustRun("events", "-n", "default"); strings.Contains(out, "Killing") || !strings.Contains(out, "Started") {
		t.Fatalf("-n default:\n%s", out)
	}
}
