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

	// A pod whose containers put the Secret where the agent writes
	// messages: expanded into a command path (a start error quotes it),
	// into args echoed to a FallbackToLogsOnError termination message,
	// printed by a failing readiness probe (env and envFrom) and by a
	// failing postStart hook. Every message shows [redacted] instead.
	envYAML := `    env:
    - name: DB_PASSWORD
      valueFrom: {secretKeyRef: {name: web-db, key: password}}`
	leaky := testutil.WriteFile(t, dir, "leaky.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: leaky
spec:
  terminationGracePeriodSeconds: 1
  restartPolicy: Never
  containers:
  - name: bad-cmd
    image: busybox:1.36
    command: ["/nonexistent-$(DB_PASSWORD)"]
%[1]s
  - name: bad-args
    image: busybox:1.36
    command: ["sh", "-c", "echo \"failed with $1\" >&2; exit 3", "sh", "$(DB_PASSWORD)"]
    terminationMessagePolicy: FallbackToLogsOnError
%[1]s
  - name: probed
    image: busybox:1.36
    command: ["sh", "-c", "exec sleep 300"]
    envFrom:
    - secretRef: {name: web-db}
    readinessProbe:
      exec: {command: ["sh", "-c", "echo \"not ready: $password\"; exit 1"]}
      periodSeconds: 1
  - name: hooked
    image: busybox:1.36
    command: ["sh", "-c", "exec sleep 300"]
%[1]s
    lifecycle:
      postStart:
        exec: {command: ["sh", "-c", "echo \"hook: $DB_PASSWORD\"; exit 1"]}
`, envYAML))
	f.mustCtl(t, "apply", "-f", leaky, "--node", n.name)
	eventually(t, waitFor, func() error {
		events := f.mustCtl(t, "events", "--node", n.name)
		for _, want := range [][]string{
			{"Failed", "pod/leaky", "/nonexistent-[redacted]"},
			{"Unhealthy", "pod/leaky", "not ready: [redacted]"},
			{"FailedPostStartHook", "pod/leaky", "hook: [redacted]"},
		} {
			if !eventHas(events, want[0], want[1:]...) {
				return fmt.Errorf("no %s event with %q:\n%s", want[0], want[1:], events)
			}
		}
		p = f.getPod(t, n.name, "default", "leaky")
		if p == nil {
			return fmt.Errorf("no status for leaky")
		}
		var msgs []string
		for _, cs := range p.Status.ContainerStatuses {
			if s := cs.State.Terminated; s != nil {
				msgs = append(msgs, cs.Name+": "+s.Message)
			}
			if s := cs.State.Waiting; s != nil {
				msgs = append(msgs, cs.Name+": "+s.Message)
			}
		}
		all := strings.Join(msgs, "\n")
		for _, want := range []string{"bad-args: failed with [redacted]", "/nonexistent-[redacted]"} {
			if !strings.Contains(all, want) {
				return fmt.Errorf("container messages lack %q:\n%s", want, all)
			}
		}
		return nil
	})

	// The secret is nowhere it must not be.
	for what, text := range map[string]string{
		"get pods -o yaml": f.mustCtl(t, "get", "pods", "--node", n.name, "-o", "yaml"),
		"describe":         f.mustCtl(t, "describe", "pod", "web", "--node", n.name),
		"describe leaky":   f.mustCtl(t, "describe", "pod", "leaky", "--node", n.name),
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
	f.mustCtl(t, "delete", "pod", "leaky", "--node", n.name, "--now")
	f.waitGone(t, n.name, "default", "web")
	f.waitGone(t, n.name, "default", "leaky")
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }
