package file

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/test/testutil"
)

const node = "Node-1"

// snapshots records what a source sends.
type snapshots struct {
	testutil.Collector[messages.PodUpdate]
}

func (s *snapshots) out(u messages.PodUpdate) { s.Add(u) }

func (s *snapshots) count() int { return s.Len() }

func (s *snapshots) last() (messages.PodUpdate, bool) {
	all := s.All()
	if len(all) == 0 {
		return messages.PodUpdate{}, false
	}
	return all[len(all)-1], true
}

// names is the sorted pod names of the latest snapshot.
func (s *snapshots) names() []string {
	u, ok := s.last()
	if !ok {
		return nil
	}
	names := []string{}
	for _, p := range u.Pods {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return names
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Until(t, 5*time.Second, what, cond)
}

func manifest(name, image string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  containers:\n  - name: c\n    image: %s\n", name, image)
}

func start(t *testing.T, cfg Config) *Source {
	t.Helper()
	s, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

func TestStartSendsSnapshotEvenWhenEmpty(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing", "manifests")
	snaps := &snapshots{}
	start(t, Config{Dir: dir, NodeName: node, Out: snaps.out})
	u, ok := snaps.last()
	if !ok || u.Op != messages.OpSet || u.Source != messages.SourceFile || u.Pods == nil || len(u.Pods) != 0 {
		t.Fatalf("first update = %+v (sent %v), want an empty SET from file", u, ok)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("missing manifest directory was not created: %v", err)
	}
	// The created directory is watched.
	testutil.WriteFile(t, dir, "web.yaml", manifest("web", "nginx"))
	eventually(t, "the new manifest", func() bool { return reflect.DeepEqual(snaps.names(), []string{"web-node-1"}) })
}

func TestStaticPodIdentity(t *testing.T) {
	dir := t.TempDir()
	testutil.WriteFile(t, dir, "web.yaml", manifest("web", "nginx"))
	snaps := &snapshots{}
	start(t, Config{Dir: dir, NodeName: node, Out: snaps.out})
	u, _ := snaps.last()
	if len(u.Pods) != 1 {
		t.Fatalf("got %d pods, want 1", len(u.Pods))
	}
	p := u.Pods[0]
	want := contentUID([]byte(manifest("web", "nginx")), node)
	checks := []struct{ field, got, want string }{
		{"name", p.Name, "web-node-1"},
		{"namespace", p.Namespace, "default"},
		{"uid", string(p.UID), string(want)},
		{"spec.nodeName", p.Spec.NodeName, node},
		{"source annotation", p.Annotations[messages.ConfigSourceAnnotation], messages.SourceFile},
		{"hash annotation", p.Annotations[messages.ConfigHashAnnotation], string(want)},
		{"mirror annotation", p.Annotations[messages.ConfigMirrorAnnotation], string(want)},
		{"manifest annotation", p.Annotations[wire.StaticManifestAnnotation], filepath.Join(dir, "web.yaml")},
		{"restartPolicy (defaulted)", string(p.Spec.RestartPolicy), string(v1.RestartPolicyAlways)},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.field, c.got, c.want)
		}
	}
	if contentUID([]byte(manifest("web", "nginx")), "other") == want {
		t.Error("UID does not depend on the node name")
	}
}

func TestManifestFilter(t *testing.T) {
	tests := map[string]bool{
		"a.yaml": true, "a.yml": true, "a.json": true, "A.YAML": true,
		".a.yaml": false, "a.yaml~": false, "a.yaml.swp": false, ".a.yaml.swx": false,
		"#a.yaml#": false, "a.txt": false, "a": false, "4913": false,
	}
	for name, want := range tests {
		if got := isManifest(name); got != want {
			t.Errorf("isManifest(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestStaticPodErrors(t *testing.T) {
	tests := []struct {
		name, content, wantErr string
	}{
		{"not yaml", "{{{", "not JSON or YAML"},
		{"no name", "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: c\n    image: x\n", "metadata.name"},
		{"no containers", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n", "spec.containers"},
		{"no image", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\nspec:\n  containers:\n  - name: c\n", "image"},
		{"wrong kind", "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n", "kind"},
		{"bad name", manifest("Bad_Name", "x"), "metadata.name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := staticPod([]byte(tt.content), node, "")
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one mentioning %q", err, tt.wantErr)
			}
		})
	}
	if _, err := staticPod([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j"},"spec":{"containers":[{"name":"c","image":"x"}]}}`), node, ""); err != nil {
		t.Errorf("JSON manifest: %v", err)
	}
}

func TestAddChangeRemoveFiles(t *testing.T) {
	dir := t.TempDir()
	testutil.WriteFile(t, dir, "a.yaml", manifest("a", "nginx"))
	snaps := &snapshots{}
	start(t, Config{Dir: dir, NodeName: node, Out: snaps.out})
	if got := snaps.names(); !reflect.DeepEqual(got, []string{"a-node-1"}) {
		t.Fatalf("initial pods %v", got)
	}
	u, _ := snaps.last()
	firstUID := u.Pods[0].UID

	testutil.WriteFile(t, dir, "b.json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b"},"spec":{"containers":[{"name":"c","image":"x"}]}}`)
	eventually(t, "b added", func() bool { return reflect.DeepEqual(snaps.names(), []string{"a-node-1", "b-node-1"}) })

	testutil.WriteFile(t, dir, "a.yaml", manifest("a", "redis"))
	eventually(t, "a changed to a new UID", func() bool {
		u, _ := snaps.last()
		for _, p := range u.Pods {
			if p.Name == "a-node-1" {
				return p.UID != firstUID && p.Spec.Containers[0].Image == "redis"
			}
		}
		return false
	})

	if err := os.Remove(filepath.Join(dir, "b.json")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "b removed", func() bool { return reflect.DeepEqual(snaps.names(), []string{"a-node-1"}) })

	// Editor temp files and dotfiles never show up.
	testutil.WriteFile(t, dir, ".hidden.yaml", manifest("hidden", "x"))
	testutil.WriteFile(t, dir, "a.yaml.swp", manifest("swap", "x"))
	n := snaps.count()
	testutil.WriteFile(t, dir, "c.yml", manifest("c", "x"))
	eventually(t, "c added", func() bool {
		return snaps.count() > n && reflect.DeepEqual(snaps.names(), []string{"a-node-1", "c-node-1"})
	})
}

func TestInvalidFileSkippedOthersDelivered(t *testing.T) {
	dir := t.TempDir()
	testutil.WriteFile(t, dir, "good.yaml", manifest("good", "nginx"))
	testutil.WriteFile(t, dir, "bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: bad\nspec:\n  contianers: []\n")
	snaps, ev := &snapshots{}, &testutil.Recorder{}
	fc := clocktesting.NewFakeClock(time.Now())
	start(t, Config{Dir: dir, NodeName: node, Out: snaps.out, Recorder: ev, Clock: fc, noWatch: true})
	if got := snaps.names(); !reflect.DeepEqual(got, []string{"good-node-1"}) {
		t.Fatalf("pods %v, want only the good one", got)
	}
	got := ev.Lines()
	if len(got) != 1 || !strings.HasPrefix(got[0], "Warning FailedValidation Static pod manifest bad.yaml is invalid") {
		t.Fatalf("events %q, want one FailedValidation for bad.yaml", got)
	}
	// An unchanged bad file is reported once, not at every rescan.
	fc.Step(DefaultRescan)
	eventually(t, "the rescan", func() bool { return snaps.count() == 2 })
	if got := ev.Lines(); len(got) != 1 {
		t.Errorf("events after rescan %q, want still one", got)
	}
}

func TestRescanCatchesWhatTheWatchMissed(t *testing.T) {
	dir := t.TempDir()
	snaps := &snapshots{}
	fc := clocktesting.NewFakeClock(time.Now())
	start(t, Config{Dir: dir, NodeName: node, Out: snaps.out, Clock: fc, Rescan: 20 * time.Second, noWatch: true})
	// Write via rename, as editors and config management do.
	tmp := filepath.Join(dir, ".web.yaml.tmp")
	testutil.WriteFile(t, dir, ".web.yaml.tmp", manifest("web", "nginx"))
	if err := os.Rename(tmp, filepath.Join(dir, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	fc.Step(19 * time.Second)
	if snaps.count() != 1 {
		t.Fatalf("snapshot sent before the rescan period: %d", snaps.count())
	}
	fc.Step(time.Second)
	eventually(t, "the rescan to find web.yaml", func() bool { return reflect.DeepEqual(snaps.names(), []string{"web-node-1"}) })
}

func TestConfigErrors(t *testing.T) {
	out := func(messages.PodUpdate) {}
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no dir", Config{NodeName: node, Out: out}, "Dir"},
		{"no node", Config{Dir: t.TempDir(), Out: out}, "NodeName"},
		{"no out", Config{Dir: t.TempDir(), NodeName: node}, "Out"},
		{"negative rescan", Config{Dir: t.TempDir(), NodeName: node, Out: out, Rescan: -time.Second}, "Rescan"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Start(context.Background(), tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one naming %s", err, tt.want)
			}
		})
	}
}

// TestOversizedManifestSkipped: a manifest over validation.MaxPodBytes is
// rejected with an event naming the limit (and never read whole), and a
// pod with too many containers with one naming spec.containers; the good
// manifest beside them is delivered.
func TestOversizedManifestSkipped(t *testing.T) {
	dir := t.TempDir()
	testutil.WriteFile(t, dir, "good.yaml", manifest("good", "nginx"))
	testutil.WriteFile(t, dir, "huge.yaml", manifest("huge", "x")+"  annotations:\n    a: "+strings.Repeat("x", 8<<20)+"\n")
	var many strings.Builder
	many.WriteString("apiVersion: v1\nkind: Pod\nmetadata:\n  name: many\nspec:\n  containers:\n")
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&many, "  - name: c%d\n    image: x\n", i)
	}
	testutil.WriteFile(t, dir, "many.yaml", many.String())
	snaps, ev := &snapshots{}, &testutil.Recorder{}
	start(t, Config{Dir: dir, NodeName: node, Out: snaps.out, Recorder: ev, noWatch: true})
	if got := snaps.names(); !reflect.DeepEqual(got, []string{"good-node-1"}) {
		t.Fatalf("pods %v, want only the good one", got)
	}
	all := strings.Join(ev.Lines(), "\n")
	if !strings.Contains(all, "huge.yaml is invalid") || !strings.Contains(all, "MaxPodBytes") ||
		!strings.Contains(all, "many.yaml is invalid") || !strings.Contains(all, "MaxContainersPerPod") {
		t.Fatalf("events %q, want huge.yaml rejected naming MaxPodBytes and many.yaml naming MaxContainersPerPod", ev.Lines())
	}
}
