package probe

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/test/testutil"
)

func TestNewHTTPRequest(t *testing.T) {
	container := &v1.Container{Ports: []v1.ContainerPort{
		{Name: "dns", ContainerPort: 53, Protocol: v1.ProtocolUDP},
		{Name: "http", ContainerPort: 8080},
	}}
	tests := []struct {
		name     string
		action   *v1.HTTPGetAction
		podIP    string
		wantURL  string
		wantHost string
		wantHdr  map[string]string
		wantErr  string
	}{
		{
			name:    "defaults: http, pod IP, number port",
			action:  &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(80)},
			podIP:   "10.0.0.5",
			wantURL: "http://10.0.0.5:80/healthz",
			wantHdr: map[string]string{"User-Agent": UserAgent, "Accept": "*/*"},
		},
		{
			name:    "named port, https, explicit host, query kept",
			action:  &v1.HTTPGetAction{Scheme: v1.URISchemeHTTPS, Host: "example.test", Path: "ready?full=1", Port: intstr.FromString("http")},
			podIP:   "10.0.0.5",
			wantURL: "https://example.test:8080/ready?full=1",
		},
		{
			name:    "ipv6 pod IP",
			action:  &v1.HTTPGetAction{Port: intstr.FromInt32(80)},
			podIP:   "fd00::1",
			wantURL: "http://[fd00::1]:80",
		},
		{
			name: "headers and Host override",
			action: &v1.HTTPGetAction{Port: intstr.FromInt32(80), HTTPHeaders: []v1.HTTPHeader{
				{Name: "Host", Value: "svc.local"}, {Name: "X-Probe", Value: "1"}, {Name: "User-Agent", Value: "mine"},
			}},
			podIP:    "10.0.0.5",
			wantURL:  "http://10.0.0.5:80",
			wantHost: "svc.local",
			wantHdr:  map[string]string{"X-Probe": "1", "User-Agent": "mine"},
		},
		{name: "UDP named port is not a match", action: &v1.HTTPGetAction{Port: intstr.FromString("dns")}, podIP: "10.0.0.5", wantErr: `httpGet.port: no TCP container port named "dns"`},
		{name: "port out of range", action: &v1.HTTPGetAction{Port: intstr.FromInt32(70000)}, podIP: "10.0.0.5", wantErr: "httpGet.port: 70000 is out of range"},
		{name: "no host and no pod IP", action: &v1.HTTPGetAction{Port: intstr.FromInt32(80)}, wantErr: "httpGet.host: empty"},
		{name: "bad scheme", action: &v1.HTTPGetAction{Scheme: "ftp", Port: intstr.FromInt32(80)}, podIP: "10.0.0.5", wantErr: "httpGet.scheme"},
		{name: "nil action", wantErr: "httpGet: must be set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := NewHTTPRequest(context.Background(), tt.action, tt.podIP, container)
			if testutil.WantError(t, err, tt.wantErr) {
				return
			}
			if got := req.URL.String(); got != tt.wantURL {
				t.Errorf("URL = %q, want %q", got, tt.wantURL)
			}
			if tt.wantHost != "" && req.Host != tt.wantHost {
				t.Errorf("Host = %q, want %q", req.Host, tt.wantHost)
			}
			for k, v := range tt.wantHdr {
				if got := req.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestHTTPGet(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("elsewhere"))
	}))
	t.Cleanup(other.Close)
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, "fine ua=%s probe=%s", r.Header.Get("User-Agent"), r.Header.Get("X-Probe"))
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte("database down"))
	})
	mux.HandleFunc("/redirect-local", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ok", http.StatusFound)
	})
	mux.HandleFunc("/redirect-fail", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/fail", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/redirect-away", func(w http.ResponseWriter, r *http.Request) {
		// Another host name for the other server: not followed.
		u := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
		http.Redirect(w, r, u, http.StatusFound)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(strings.Repeat("b", 3*maxBody)))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	host, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)
	closedPort := freePort(t)
	container := &v1.Container{Ports: []v1.ContainerPort{{Name: "web", ContainerPort: int32(port)}}}

	tests := []struct {
		name    string
		path    string
		port    intstr.IntOrString
		headers []v1.HTTPHeader
		timeout time.Duration
		wantRes messages.ProbeResult
		wantMsg string
		wantErr string
	}{
		{name: "200 with headers", path: "/ok", headers: []v1.HTTPHeader{{Name: "X-Probe", Value: "yes"}}, wantRes: messages.ProbeSuccess, wantMsg: "fine ua=" + UserAgent + " probe=yes"},
		{name: "named port", path: "/ok", port: intstr.FromString("web"), wantRes: messages.ProbeSuccess, wantMsg: "fine"},
		{name: "500 is failure", path: "/fail", wantRes: messages.ProbeFailure, wantMsg: "HTTP probe failed with statuscode: 500, body: database down"},
		{name: "404 is failure", path: "/nope", wantRes: messages.ProbeFailure, wantMsg: "statuscode: 404"},
		{name: "same-host redirect is followed", path: "/redirect-local", wantRes: messages.ProbeSuccess, wantMsg: "fine"},
		{name: "same-host redirect to a 500 fails", path: "/redirect-fail", wantRes: messages.ProbeFailure, wantMsg: "statuscode: 500"},
		{name: "redirect to another host is a success with warning", path: "/redirect-away", wantRes: messages.ProbeSuccess, wantMsg: "Probe terminated redirects"},
		{name: "body is truncated", path: "/big", wantRes: messages.ProbeSuccess, wantMsg: "...(truncated)"},
		{name: "timeout is failure", path: "/slow", timeout: 100 * time.Millisecond, wantRes: messages.ProbeFailure, wantMsg: "deadline exceeded"},
		{name: "connection refused is failure", path: "/ok", port: intstr.FromInt(closedPort), wantRes: messages.ProbeFailure, wantMsg: "connection refused"},
		{name: "unknown named port is an error", port: intstr.FromString("nope"), wantRes: messages.ProbeUnknown, wantErr: `no TCP container port named "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.port
			if p.Type == intstr.Int && p.IntVal == 0 {
				p = intstr.FromInt(port)
			}
			timeout := tt.timeout
			if timeout == 0 {
				timeout = 2 * time.Second
			}
			action := &v1.HTTPGetAction{Path: tt.path, Port: p, HTTPHeaders: tt.headers}
			res, msg, err := HTTPGet(context.Background(), action, host, container, timeout)
			checkResult(t, res, msg, err, tt.wantRes, tt.wantMsg, tt.wantErr)
			if len(msg) > maxBody+len("Probe terminated redirects, Response body: ...(truncated)") {
				t.Errorf("message length %d exceeds the limit", len(msg))
			}
		})
	}
}

// freePort returns a port on 127.0.0.1 nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return port
}
