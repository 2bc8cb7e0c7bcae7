package fleet

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/test/testutil"
)

// leakWatch scans everything klog writes (from every agent in this test
// binary) for a string, keeping no log in memory.
type leakWatch struct {
	mu     sync.Mutex
	needle []byte
	tail   []byte // the end of the previous write, for a match across writes
	hits   int
	lines  int
}

func (w *leakWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	buf := append(append([]byte{}, w.tail...), p...)
	w.hits += bytes.Count(buf, w.needle)
	w.lines += bytes.Count(p, []byte("\n"))
	if n := len(w.needle) - 1; len(buf) > n {
		w.tail = append(w.tail[:0], buf[len(buf)-n:]...)
	}
	return len(p), nil
}

// testObjects: a pod whose env and volumes come from a ConfigMap and a
// Secret applied with actorletctl in the same file runs; a ConfigMap
// update reaches the mounted files (one ..data swap) without restarting
// the container, whose env keeps the old value; the Secret's value never
// appears in the pod's status, the node's events, or the agent's logs
// (at -v 4).
func testObjects(t *testing.T, f *fleet) {
	secret := "s3cr3t-" + rand.String(16)
	w := &leakWatch{needle: []byte(secret)}
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("v", "4")
	// klog writes to the output set here only when not logging to stderr
	// (go test -v keeps logtostderr): then the watch copies to stderr.
	_ = fs.Set("logtostderr", "false")
	if testing.Verbose() {
		klog.SetOutput(io.MultiWriter(w, os.Stderr))
	} else {
		klog.SetOutput(w)
	}
	t.Cleanup(func() {
		_ = fs.Set("v", "0")
		if testing.Verbose() {
			_ = fs.Set("logtostderr", "true")
			klog.SetOutput(os.Stderr)
		} else {
			klog.SetOutput(nopWriter{})
		}
	})

	n := f.startNode(t, "obj-n1", map[string]string{"role": "objects"}, nil)
	dir := t.TempDir()
	envOut := filepath.Join(dir, "env")
	file := testutil.WriteFile(t, dir, "web.yaml", fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  greeting: hello
  app.properties: |
    color=blue
---
apiVersion: v1
kind: Secret
metadata:
  name: web-db
type: Opaque
stringData:
  password: %s
---
%s`, secret, podYAML("web", fmt.Sprintf(`echo "$GREETING $DB_PASSWORD" > %s; exec sleep 300`, envOut),
		`    env:
    - name: GREETING
      valueFrom: {configMapKeyRef: {name: web-config, key: greeting}}
    - name: DB_PASSWORD
      valueFrom: {secretKeyRef: {name: web-db, key: password}}
    volumeMounts:
    - {name: config, mountPath: /etc/web}
    - {name: db, mountPath: /etc/db, readOnly: true}
  volumes:
  - name: config
    configMap: {name: web-config}
  - name: db
    secret: {secretName: web-db, defaultMode: 0400}`)))
	out := f.mustCtl(t, "apply", "-f", file, "--node", n.name)
	for _, want := range []string{"configmap/web-config created", "secret/web-db created", "pod/web created"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, secret) {
		t.Error("apply printed the secret")
	}
	p := f.waitRunning(t, n.name, "default", "web")
	firstID := containerID(t, p, "app")
	var env string
	eventually(t, waitFor, func() error {
		b, err := os.ReadFile(envOut)
		env = strings.TrimSpace(string(b))
		return err
	})
	if env != "hello "+secret {
		t.Fatalf("env = %q", env)
	}
	vol := filepath.Join(n.cfg.RootDir, "pods", string(p.UID), "volumes", "projected")
	readVol := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(vol, name))
		return string(b)
	}
	if got := readVol("config/app.properties"); got != "color=blue\n" {
		t.Errorf("config volume: %q", got)
	}
	if got := readVol("db/password"); got != secret {
		t.Error("secret volume does not hold the secret")
	}
	if fi, err := os.Stat(filepath.Join(vol, "db", "password")); err != nil || fi.Mode().Perm() != 0o400 {
		t.Errorf("secret file mode: %v %v", fi, err)
	}

	// Update the ConfigMap: the file changes within a sync, the pod is not
	// restarted (env keeps the old value).
	upd := testutil.WriteFile(t, dir, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {greeting: bonjour, app.properties: \"color=green\\n\"}\n")
	start := time.Now()
	if out := f.mustCtl(t, "apply", "-f", upd, "--node", n.name); !strings.Contains(out, "configmap/web-config configured") {
		t.Errorf("apply update: %s", out)
	}
	eventually(t, waitFor, func() error {
		if got := readVol("config/app.properties"); got != "color=green\n" {
			return fmt.Errorf("config volume still %q", got)
		}
		return nil
	})
	t.Logf("ConfigMap update reached the volume in %s (machine shared)", time.Since(start).Round(time.Millisecond))
	if _, err := os.Lstat(filepath.Join(vol, "config", "..data")); err != nil {
		t.Errorf("no ..data link: %v", err)
	}
	p = f.waitRunning(t, n.name, "default", "web")
	if containerID(t, p, "app") != firstID || p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Error("a ConfigMap update restarted the container")
	}

	// The secret is nowhere it must not be.
	for what, text := range map[string]string{
		"get pods -o yaml": f.mustCtl(t, "get", "pods", "--node", n.name, "-o", "yaml"),
		"describe":         f.mustCtl(t, "describe", "pod", "web", "--node", n.name),
		"events":           f.mustCtl(t, "events", "--node", n.name),
		"get secrets":      f.mustCtl(t, "get", "secrets"),
	} {
		if strings.Contains(text, secret) {
			t.Errorf("%s shows the secret", what)
		}
	}
	w.mu.Lock()
	hits, lines := w.hits, w.lines
	w.mu.Unlock()
	if hits != 0 {
		t.Errorf("the agent logged the secret %d times", hits)
	}
	if lines == 0 {
		t.Error("no agent log was captured: the leak check saw nothing")
	}

	f.mustCtl(t, "delete", "pod", "web", "--node", n.name, "--now")
	f.waitGone(t, n.name, "default", "web")
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }
