package kuberuntime

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestPostStartHTTPHook(t *testing.T) {
	var hits atomic.Int32
	var fail atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path != "/started" || r.Header.Get("X-Hook") != "post" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if fail.Load() {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)

	for _, tt := range []struct {
		name    string
		fail    bool
		wantErr error
	}{
		{"success", false, nil},
		{"server error kills the container", true, ErrPostStartHook},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			fail.Store(tt.fail)
			pod := newPod("web", "app")
			pod.Spec.Containers[0].Ports = []v1.ContainerPort{{Name: "http", ContainerPort: int32(p)}}
			pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{
				Host: host, Port: intstr.FromString("http"), Path: "/started",
				HTTPHeaders: []v1.HTTPHeader{{Name: "X-Hook", Value: "post"}},
			}}}
			before := hits.Load()
			err := e.sync(t, pod, nil).Error()
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if hits.Load() != before+1 {
				t.Errorf("hook requests = %d, want 1", hits.Load()-before)
			}
			_, api := e.status(t, pod)
			if tt.wantErr != nil {
				if w := api.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "PostStartHookError" {
					t.Errorf("state = %+v, want waiting PostStartHookError", api.ContainerStatuses[0].State)
				}
			}
		})
	}
}

func TestFailedPreStopHookStillStops(t *testing.T) {
	e := newEnv(t)
	pod := drainPod()
	if err := e.sync(t, pod, nil).Error(); err != nil {
		t.Fatal(err)
	}
	e.rt.FakeRuntimeService.InjectError("ExecSync", errors.New("exit status 2"))
	st, _ := e.status(t, pod)
	id := st.FindContainerStatusByName("app").ID
	if err := e.m.KillContainer(context.Background(), pod, id, "app", "", nil); err != nil {
		t.Fatal(err)
	}
	e.rec.Expect(t, "FailedPreStopHook")
	if got, ok := e.rt.stopTimeout(id); !ok || got != 30 {
		t.Errorf("stop timeout = %d (called %t), want 30", got, ok)
	}
}

func TestResolvePort(t *testing.T) {
	c := &v1.Container{Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	for _, tt := range []struct {
		port intstr.IntOrString
		want int
		err  bool
	}{
		{intstr.FromInt32(80), 80, false},
		{intstr.FromString("http"), 8080, false},
		{intstr.FromString("9090"), 9090, false},
		{intstr.FromString("grpc"), 0, true},
		{intstr.FromInt32(70000), 0, true},
	} {
		got, err := resolvePort(tt.port, c)
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("resolvePort(%v) = %d, %v", tt.port.String(), got, err)
		}
	}
}
