package kuberuntime

import (
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distribution/reference"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/test/testutil"
)

// registryCRI is a CRI image service on a real unix socket that records
// every PullImage request and acts as the registries behind it: a registry
// with a login refuses a pull without it, as a registry answers 401.
type registryCRI struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer

	logins map[string][2]string // registry host → username, password

	mu    sync.Mutex
	pulls []pullRecord
}

type pullRecord struct {
	image string
	auth  *runtimeapi.AuthConfig // nil: anonymous
}

func (r *registryCRI) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: "registry-test", RuntimeApiVersion: "v1"}, nil
}

func (r *registryCRI) ImageStatus(context.Context, *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	return &runtimeapi.ImageStatusResponse{}, nil // never present: every ensureImage pulls
}

func (r *registryCRI) PullImage(_ context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	rec := pullRecord{image: req.GetImage().GetImage()}
	if a := req.GetAuth(); a != nil {
		rec.auth = &runtimeapi.AuthConfig{Username: a.Username, Password: a.Password, Auth: a.Auth, ServerAddress: a.ServerAddress, IdentityToken: a.IdentityToken, RegistryToken: a.RegistryToken}
	}
	r.mu.Lock()
	r.pulls = append(r.pulls, rec)
	r.mu.Unlock()
	named, err := reference.ParseNormalizedNamed(rec.image)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if login, ok := r.logins[reference.Domain(named)]; ok {
		if rec.auth == nil || rec.auth.Username != login[0] || rec.auth.Password != login[1] {
			return nil, status.Errorf(codes.Unknown, "failed to pull and unpack image %q: failed to resolve reference: pulling from host %s failed with status code [manifests]: 401 Unauthorized", rec.image, reference.Domain(named))
		}
	}
	return &runtimeapi.PullImageResponse{ImageRef: "sha256:" + strings.Repeat("ab", 32)}, nil
}

func (r *registryCRI) takePulls() []pullRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pulls
	r.pulls = nil
	return p
}

// startRegistryCRI serves r on a unix socket and dials it with the CRI
// client; both end with the test.
func startRegistryCRI(t *testing.T, r *registryCRI) *cri.Client {
	t.Helper()
	dir, err := os.MkdirTemp("", "reg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "cri.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, r)
	runtimeapi.RegisterImageServiceServer(srv, r)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := cri.Dial(ctx, "unix://"+sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func dockerConfigJSONSecret(name, auths string) *v1.Secret {
	return &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Type: v1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(`{"auths":` + auths + `}`)}}
}

// captureKlog sends klog's output, at verbosity v, to a buffer until the
// test ends.
func captureKlog(t *testing.T, v string) *testutil.SyncBuffer {
	t.Helper()
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	oldV := fs.Lookup("v").Value.String()
	oldToStderr := fs.Lookup("logtostderr").Value.String()
	buf := &testutil.SyncBuffer{}
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("v", v)
	klog.SetOutput(buf)
	t.Cleanup(func() {
		klog.Flush()
		_ = fs.Set("v", oldV)
		_ = fs.Set("logtostderr", oldToStderr)
		klog.SetOutput(os.Stderr)
	})
	return buf
}

// TestPullSecretsReachPullImage checks, over real gRPC, the AuthConfig a
// CRI runtime receives for several registries, secrets and wildcard keys:
// the kubelet's keyring order (most specific key first), every matching
// credential tried until one works, Docker Hub's key for Hub images,
// anonymous pulls without a matching secret, a missing or malformed secret
// reported and skipped, and no credential in the logs at -v=6.
func TestPullSecretsReachPullImage(t *testing.T) {
	logs := captureKlog(t, "6")
	reg := &registryCRI{logins: map[string][2]string{
		"registry.example.com:5000": {"alice", "pw-alice"},
		"eu.corp.example":           {"corp", "pw-corp"},
		"quay.io":                   {"team", "pw-team"},
		"docker.io":                 {"hub", "pw-hub"},
	}}
	client := startRegistryCRI(t, reg)
	rec := &testutil.Recorder{}
	objs := &mapObjects{cms: map[string]*v1.ConfigMap{}, secrets: map[string]*v1.Secret{}}
	m := NewManager(client, Options{Recorder: rec, Objects: objs, PodsDir: t.TempDir(), PodLogsDir: t.TempDir()})

	objs.secrets["default/private"] = dockerConfigJSONSecret("private", `{
		"registry.example.com:5000": {"auth": "`+b64("alice:pw-alice")+`"},
		"https://registry.example.com": {"username": "wrong-port", "password": "pw-wrong-port"}}`)
	objs.secrets["default/corp"] = dockerConfigJSONSecret("corp", `{"*.corp.example": {"username": "corp", "password": "pw-corp"}}`)
	objs.secrets["default/quay"] = dockerConfigJSONSecret("quay", `{
		"quay.io": {"username": "stale", "password": "pw-stale"},
		"quay.io/team": {"username": "team", "password": "pw-team"}}`)
	// Rotation: two credentials for one registry in two secrets, the
	// first stale; and the unpadded base64 form of auth.
	objs.secrets["default/hub"] = dockerConfigJSONSecret("hub", `{"https://index.docker.io/v1/": {"auth": "`+strings.TrimRight(b64("hub:pw-hub"), "=")+`"}}`)
	objs.secrets["default/hub-old"] = &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hub-old"}, Type: v1.SecretTypeDockercfg,
		Data: map[string][]byte{v1.DockerConfigKey: []byte(`{"https://index.docker.io/v1/": {"username": "hub-old", "password": "pw-hub-old"}}`)}}
	objs.secrets["default/garbled"] = dockerConfigJSONSecret("garbled", `{"quay.io": {"auth": "`+b64("no-colon-pw-garbled")+`"}}`)
	objs.secrets["default/opaque"] = &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "opaque"}, Type: v1.SecretTypeOpaque,
		Data: map[string][]byte{"password": []byte("pw-opaque")}}

	anon := (*runtimeapi.AuthConfig)(nil)
	login := func(u, p string) *runtimeapi.AuthConfig { return &runtimeapi.AuthConfig{Username: u, Password: p} }
	cases := []struct {
		name    string
		image   string
		secrets []string
		want    []*runtimeapi.AuthConfig // the PullImage calls' auth, in order
		wantErr string                   // "" : the pull works
		event   string                   // a FailedToRetrieveImagePullSecret event containing this
	}{
		{name: "no pull secrets", image: "registry.example.com:5000/app:1", want: []*runtimeapi.AuthConfig{anon}, wantErr: "401 Unauthorized"},
		{name: "host and port", image: "registry.example.com:5000/team/app:1", secrets: []string{"private"}, want: []*runtimeapi.AuthConfig{login("alice", "pw-alice")}},
		{name: "a key without port only without port", image: "registry.example.com/app:1", secrets: []string{"private"}, want: []*runtimeapi.AuthConfig{login("wrong-port", "pw-wrong-port")}},
		{name: "wildcard host part", image: "eu.corp.example/app:1", secrets: []string{"corp"}, want: []*runtimeapi.AuthConfig{login("corp", "pw-corp")}},
		{name: "wildcard matches one part only", image: "a.b.corp.example/app:1", secrets: []string{"corp"}, want: []*runtimeapi.AuthConfig{anon}},
		{name: "longest path first, then the host", image: "quay.io/team/app:1", secrets: []string{"quay"}, want: []*runtimeapi.AuthConfig{login("team", "pw-team")}},
		{name: "host key alone for another path", image: "quay.io/other/app:1", secrets: []string{"quay"}, want: []*runtimeapi.AuthConfig{login("stale", "pw-stale")}, wantErr: "401 Unauthorized"},
		{name: "every matching credential tried in order", image: "busybox:1.36", secrets: []string{"hub-old", "hub"},
			want: []*runtimeapi.AuthConfig{login("hub-old", "pw-hub-old"), login("hub", "pw-hub")}},
		{name: "a refused credential fails the pull with the registry's error", image: "docker.io/library/busybox:1.36", secrets: []string{"hub-old"},
			want: []*runtimeapi.AuthConfig{login("hub-old", "pw-hub-old")}, wantErr: "401 Unauthorized"},
		{name: "no key matches: anonymous", image: "ghcr.io/x/y:1", secrets: []string{"private", "corp"}, want: []*runtimeapi.AuthConfig{anon}},
		{name: "a missing secret is reported, the others used", image: "eu.corp.example/app:2", secrets: []string{"absent", "corp"},
			want: []*runtimeapi.AuthConfig{login("corp", "pw-corp")}, event: "(absent)"},
		{name: "malformed and wrong-typed secrets are reported and skipped", image: "quay.io/team/app:2", secrets: []string{"garbled", "opaque", "quay"},
			want: []*runtimeapi.AuthConfig{login("team", "pw-team")}, event: "garbled: .dockerconfigjson: auth: must be base64(username:password), opaque: type"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod(strings.ReplaceAll(tc.name, " ", "-"), "app")
			c := &pod.Spec.Containers[0]
			c.Image, c.ImagePullPolicy = tc.image, v1.PullAlways
			for _, s := range tc.secrets {
				pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, v1.LocalObjectReference{Name: s})
			}
			before := len(rec.Events())
			_, err := m.ensureImage(context.Background(), pod, c, nil)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("ensureImage: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("ensureImage: got %v, want an error containing %q", err, tc.wantErr)
			}
			if tc.wantErr != "" {
				if reason, _ := reasonOf(err); reason != ErrImagePull.Error() {
					t.Errorf("reason %q, want %s", reason, ErrImagePull)
				}
			}
			got := reg.takePulls()
			if len(got) != len(tc.want) {
				t.Fatalf("%d PullImage calls %v, want %d", len(got), got, len(tc.want))
			}
			for i, p := range got {
				if p.image != tc.image {
					t.Errorf("pull %d: image %q, want %q", i, p.image, tc.image)
				}
				if fmt.Sprint(p.auth) != fmt.Sprint(tc.want[i]) {
					t.Errorf("pull %d: auth %v, want %v", i, p.auth, tc.want[i])
				}
			}
			var failed []string
			for _, e := range rec.Events()[before:] {
				if e.Reason == "FailedToRetrieveImagePullSecret" {
					failed = append(failed, e.Message)
					if e.Type != v1.EventTypeWarning {
						t.Errorf("event type %s, want Warning", e.Type)
					}
				}
			}
			switch {
			case tc.event == "" && len(failed) > 0:
				t.Errorf("unexpected events %q", failed)
			case tc.event != "" && (len(failed) != 1 || !strings.Contains(failed[0], tc.event)):
				t.Errorf("events %q, want one containing %q", failed, tc.event)
			}
		})
	}
	klog.Flush()
	out := logs.String()
	if !strings.Contains(out, "CRI call") || !strings.Contains(out, "PullImage") {
		t.Fatalf("the -v=6 CRI trace did not run; log:\n%s", out)
	}
	for _, e := range rec.Events() {
		out += e.Message
	}
	for _, secret := range []string{"pw-", b64("alice:pw-alice"), "no-colon"} {
		if strings.Contains(out, secret) {
			t.Errorf("a credential (%q) is in the logs or events:\n%s", secret, out)
		}
	}
}

// TestPullSecretsLimits: a pod naming more pull secrets than are read, and
// a secret with more registries than allowed, are reported, not fatal.
func TestPullSecretsLimits(t *testing.T) {
	reg := &registryCRI{}
	client := startRegistryCRI(t, reg)
	rec := &testutil.Recorder{}
	objs := &mapObjects{cms: map[string]*v1.ConfigMap{}, secrets: map[string]*v1.Secret{}}
	m := NewManager(client, Options{Recorder: rec, Objects: objs})
	var auths []string
	for i := 0; i < 300; i++ {
		auths = append(auths, fmt.Sprintf(`"r%d.example": {"username": "u", "password": "p"}`, i))
	}
	objs.secrets["default/huge"] = dockerConfigJSONSecret("huge", "{"+strings.Join(auths, ",")+"}")
	pod := newPod("limits", "app")
	c := &pod.Spec.Containers[0]
	c.Image, c.ImagePullPolicy = "r1.example/app:1", v1.PullAlways
	pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, v1.LocalObjectReference{Name: "huge"})
	for i := 0; i < 100; i++ {
		pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, v1.LocalObjectReference{Name: fmt.Sprintf("s%d", i)})
	}
	if _, err := m.ensureImage(context.Background(), pod, c, nil); err != nil {
		t.Fatalf("ensureImage: %v", err)
	}
	if pulls := reg.takePulls(); len(pulls) != 1 || pulls[0].auth != nil {
		t.Errorf("pulls %v, want one anonymous", pulls)
	}
	var msg string
	for _, e := range rec.Events() {
		if e.Reason == "FailedToRetrieveImagePullSecret" {
			msg = e.Message
		}
	}
	for _, want := range []string{"huge: 300 registries: limit is 256", "imagePullSecrets[64:]: only the first 64 are read"} {
		if !strings.Contains(msg, want) {
			t.Errorf("event %q: want %q in it", msg, want)
		}
	}
}
