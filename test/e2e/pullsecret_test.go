//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	gcrv1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// basicAuth wraps a registry: every request needs the login, else 401 with
// a Basic challenge, as a private registry answers.
func basicAuth(next http.Handler, user, pass string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(user)) != 1 || subtle.ConstantTimeCompare([]byte(p), []byte(pass)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="actorlet-e2e"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// busyboxRegistryImage builds a one-layer image of the host's static busybox
// (sh, sleep and echo as links), linux/amd64, Cmd sh.
func busyboxRegistryImage(t *testing.T) gcrv1.Image {
	t.Helper()
	bin, err := os.ReadFile("/bin/busybox")
	if err != nil {
		t.Fatalf("read /bin/busybox (busybox-static, installed by setup.sh): %v", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for d, mode := range map[string]int64{"bin/": 0o755, "tmp/": 0o1777} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: mode}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "bin/busybox", Mode: 0o755, Size: int64(len(bin))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(bin); err != nil {
		t.Fatal(err)
	}
	for _, applet := range []string{"sh", "sleep", "echo"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + applet, Linkname: "busybox", Mode: 0o777}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	layerBytes := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerBytes)), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	// An image without os and architecture is dropped by containerd.
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Config.Cmd = []string{"sh"}
	cfg.Config.Env = []string{"PATH=/bin"}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		t.Fatal(err)
	}
	return img
}

// startPrivateRegistry serves an in-process registry behind basic auth on
// a loopback port with the busybox image; see startRegistry.
func startPrivateRegistry(t *testing.T, user, pass string) string {
	t.Helper()
	return startRegistry(t, "e2e/private-busybox", busyboxRegistryImage(t), user, pass)
}

// startRegistry serves an in-process registry on a loopback port
// (containerd's CRI pulls from a loopback registry over plain HTTP),
// behind basic auth unless user is empty, pushes img to it as repo and
// returns the image's reference; the server stops and the image leaves
// containerd with the test.
func startRegistry(t *testing.T, repo string, img gcrv1.Image, user, pass string) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	opts := []remote.Option{}
	if user != "" {
		h = basicAuth(h, user, pass)
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: user, Password: pass}))
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() { _ = srv.Close() })
	ref := fmt.Sprintf("%s/%s:%s", lis.Addr(), repo, runID)
	tag, err := name.NewTag(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := remote.Write(tag, img, append(opts, remote.WithContext(ctx))...); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if c, err := dialCRI(ctx); err == nil {
			_ = c.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: ref})
			_ = c.Close()
		}
	})
	return ref
}

// Scenario: a pod whose image is in a registry that requires a login runs
// with a kubernetes.io/dockerconfigjson imagePullSecret from the bus;
// without it, it fails clearly: ErrImagePull, with the registry's 401 in
// the message, then ImagePullBackOff. A pull secret that does not exist
// is reported with the kubelet's FailedToRetrieveImagePullSecret event.
func TestPullSecretPrivateRegistry(t *testing.T) {
	const user, pass = "e2e-user", "e2e-pw-Secret1"
	ref := startPrivateRegistry(t, user, pass)
	host := ref[:strings.Index(ref, "/")]
	a := startAgent(t, agentOptions{})

	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	objs := filepath.Join(t.TempDir(), "regcred.yaml")
	y := fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: regcred, namespace: %s}
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{"auths":{"%s":{"auth":"%s"}}}'
`, namespace, host, auth)
	if err := os.WriteFile(objs, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	a.mustCtl(t, "apply", "-f", objs)
	t.Cleanup(func() { a.ctl("delete", "secret", "regcred", "-n", namespace) })

	with := shPod("private-with-secret", "sleep 3600")
	with.Spec.Containers[0].Image = ref
	with.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: "absent"}, {Name: "regcred"}}
	without := shPod("private-without-secret", "sleep 3600")
	without.Spec.Containers[0].Image = ref
	without.Spec.Containers[0].ImagePullPolicy = v1.PullAlways // never the copy the other pod pulled
	a.apply(t, with, without)

	a.waitPod(t, "private-with-secret", 2*time.Minute, isRunning)
	p := a.waitPod(t, "private-without-secret", 2*time.Minute, func(p *v1.Pod) error {
		cs := containerStatus(p, "main")
		if cs == nil || cs.State.Waiting == nil {
			return fmt.Errorf("no waiting container")
		}
		if r := cs.State.Waiting.Reason; r != "ErrImagePull" && r != "ImagePullBackOff" {
			return fmt.Errorf("waiting reason %q, want ErrImagePull or ImagePullBackOff", r)
		}
		return nil
	})
	// The message of ErrImagePull carries containerd's error with the auth
	// failure (1.6: the registry's 401; 2.x: "authorization failed: no basic
	// auth credentials"); a back-off's message only says back-off: find the
	// pull's event.
	authFailed := func(s string) bool {
		return strings.Contains(s, "401") || strings.Contains(s, "authorization failed")
	}
	msg := containerStatus(p, "main").State.Waiting.Message
	if !authFailed(msg) {
		out, _, _ := a.ctl("describe", "pod", "private-without-secret", "-n", namespace)
		if !authFailed(out) {
			t.Errorf("no auth failure (401, authorization failed) in the waiting message %q nor in describe:\n%s", msg, out)
		}
	}
	out, _, _ := a.ctl("describe", "pod", "private-with-secret", "-n", namespace)
	if !strings.Contains(out, "FailedToRetrieveImagePullSecret") || !strings.Contains(out, "absent") {
		t.Errorf("describe lacks the FailedToRetrieveImagePullSecret event naming the missing secret:\n%s", out)
	}
	if strings.Contains(out, pass) || strings.Contains(out, auth) || a.logContains(pass) || a.logContains(auth) {
		t.Error("the registry password is in describe or the agent's log")
	}
}
