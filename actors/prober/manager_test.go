package prober

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/actorlet/actorlet/messages"
)

func kindsOf(states []messages.ProbeState) string {
	out := ""
	for _, s := range states {
		out += fmt.Sprintf("%s/%s ", s.ContainerName, s.Kind)
	}
	return out
}

func TestManagerStartsAndStopsWorkers(t *testing.T) {
	h := newHarness(t)
	pod := testPod("u1",
		v1.Container{Name: "app", LivenessProbe: execProbe("check live", nil), ReadinessProbe: execProbe("check ready", nil)},
		v1.Container{Name: "plain"},
		v1.Container{Name: "bad", LivenessProbe: &v1.Probe{}}, // no handler: not run
	)
	always := v1.ContainerRestartPolicyAlways
	pod.Spec.InitContainers = []v1.Container{
		{Name: "sidecar", RestartPolicy: &always, StartupProbe: execProbe("check sidecar", nil)},
		{Name: "init", ReadinessProbe: execProbe("never", nil)}, // plain init containers are not probed
	}
	other := testPod("u2", v1.Container{Name: "db", ReadinessProbe: execProbe("check db", nil)})

	if got := h.list("u1"); len(got) != 0 {
		t.Fatalf("probes before any status: %v", got)
	}
	// Workers exist as soon as the pod is known, before containers have IDs.
	h.send(statusOf(pod, ""))
	h.send(statusOf(other, "10.0.0.2", cstate{name: "db", id: "d1", running: true, startedAt: h.clock.Now()}))
	eventually(t, "workers of u1", func() bool {
		return kindsOf(h.list("u1")) == "app/liveness app/readiness sidecar/startup "
	})
	st, _ := h.state("u1", "app", messages.Readiness)
	if st.Result != messages.ProbeFailure || st.ContainerID != "" {
		t.Fatalf("initial readiness state = %+v, want Failure without a container", st)
	}
	if n := h.exec.count("check live", ""); n != 0 {
		t.Fatalf("probed a container without an ID %d times", n)
	}
	h.waitChanges("db", messages.Readiness, "d1=Failure", "d1=Success")

	// A running container gets probed; ListProbes shows the state.
	h.send(statusOf(pod, "10.0.0.1",
		cstate{name: "app", id: "a1", running: true, startedAt: h.clock.Now()},
		cstate{name: "sidecar", id: "s1", running: true, startedAt: h.clock.Now()}))
	h.waitChanges("app", messages.Readiness, "a1=Failure", "a1=Success")
	h.waitState("u1", "app", messages.Readiness, "state", func(s messages.ProbeState) bool {
		return s.ContainerID == "a1" && s.Result == messages.ProbeSuccess && s.Successes == 1 &&
			s.Message == "check ready is fine" && s.LastProbe.Equal(h.clock.Now())
	})

	// A spec without the readiness probe stops that worker.
	trimmed := pod.DeepCopy()
	trimmed.Spec.Containers[0].ReadinessProbe = nil
	h.send(statusOf(trimmed, "10.0.0.1", cstate{name: "app", id: "a1", running: true, startedAt: h.clock.Now()}))
	eventually(t, "readiness worker stopped", func() bool {
		return kindsOf(h.list("u1")) == "app/liveness sidecar/startup "
	})

	// PodForgotten stops every worker of the pod and no probe runs after.
	h.send(&messages.PodForgotten{UID: "u1"})
	eventually(t, "u1 workers gone", func() bool { return len(h.list("u1")) == 0 })
	live := h.exec.count("check live", "")
	dbCalls := h.exec.count("check db", "")
	h.step(10 * time.Second)
	eventually(t, "the other pod still probed", func() bool { return h.exec.count("check db", "") > dbCalls })
	if got := h.exec.count("check live", ""); got != live {
		t.Fatalf("forgotten pod probed %d more times", got-live)
	}

	// A finished pod's workers stop too.
	done := statusOf(other, "10.0.0.2")
	done.Status.Phase = v1.PodSucceeded
	h.send(done)
	eventually(t, "u2 workers gone", func() bool { return len(h.list("u2")) == 0 })
}

func TestDeletingPodKeepsLivenessSuccess(t *testing.T) {
	h := newHarness(t)
	pod := testPod("u1", v1.Container{Name: "app", LivenessProbe: execProbe("check live", func(p *v1.Probe) { p.FailureThreshold = 1 })})
	h.exec.set("check live", 1)
	h.send(statusOf(pod, "", cstate{name: "app", id: "c1", running: true, startedAt: h.clock.Now()}))
	h.waitChanges("app", messages.Liveness, "c1=Success", "c1=Failure")

	// A new instance while the pod is being deleted: no probing, Success.
	deleting := pod.DeepCopy()
	now := metav1.NewTime(h.clock.Now())
	deleting.DeletionTimestamp = &now
	h.send(statusOf(deleting, "", cstate{name: "app", id: "c2", running: true, startedAt: h.clock.Now()}))
	h.waitChanges("app", messages.Liveness, "c1=Success", "c1=Failure", "c2=Success")
	h.step(10 * time.Second)
	h.list("u1")
	if got := h.exec.count("check live", "c2"); got != 0 {
		t.Fatalf("probed a deleting pod's container %d times", got)
	}
}

func TestHTTPReadinessAgainstRealServer(t *testing.T) {
	var healthy atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ready" || !healthy.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	host, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)

	h := newHarness(t)
	pod := testPod("u1", v1.Container{
		Name:  "web",
		Ports: []v1.ContainerPort{{Name: "http", ContainerPort: int32(port)}},
		ReadinessProbe: &v1.Probe{
			ProbeHandler:     v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http")}},
			FailureThreshold: 1,
		},
	})
	h.send(statusOf(pod, host, cstate{name: "web", id: "w1", running: true, startedAt: h.clock.Now()}))
	h.waitState("u1", "web", messages.Readiness, "a failed probe", func(s messages.ProbeState) bool { return s.Failures == 1 })
	if s, _ := h.state("u1", "web", messages.Readiness); s.Message != "HTTP probe failed with statuscode: 503" {
		t.Fatalf("message = %q", s.Message)
	}
	healthy.Store(true)
	h.step(10 * time.Second)
	h.waitChanges("web", messages.Readiness, "w1=Failure", "w1=Success")
	healthy.Store(false)
	h.step(10 * time.Second)
	h.waitChanges("web", messages.Readiness, "w1=Failure", "w1=Success", "w1=Failure")
	eventually(t, "Unhealthy event", func() bool {
		for _, e := range h.rec.Lines() {
			if e == "Warning Unhealthy Readiness probe failed: HTTP probe failed with statuscode: 503" {
				return true
			}
		}
		return false
	})
}
