package volume

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/test/testutil"
)

func TestWriteSwapsDataAtomically(t *testing.T) {
	dir := t.TempDir()
	changed, err := Write(dir, map[string]File{"a": {Data: []byte("1"), Mode: 0o644}, "sub/b": {Data: []byte("2"), Mode: 0o600}})
	if err != nil || !changed {
		t.Fatalf("Write = %v, %v", changed, err)
	}
	if testutil.ReadFile(t, filepath.Join(dir, "a")) != "1" || testutil.ReadFile(t, filepath.Join(dir, "sub", "b")) != "2" {
		t.Fatal("content not visible")
	}
	if target, _ := os.Readlink(filepath.Join(dir, "a")); target != filepath.Join(DataDir, "a") {
		t.Errorf("a links to %q, want through %s", target, DataDir)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "sub", "b")); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	first, _ := os.Readlink(filepath.Join(dir, DataDir))

	// The same payload changes nothing.
	if changed, err := Write(dir, map[string]File{"a": {Data: []byte("1"), Mode: 0o644}, "sub/b": {Data: []byte("2"), Mode: 0o600}}); err != nil || changed {
		t.Fatalf("same payload: changed=%v err=%v", changed, err)
	}

	// An update: new content, a name dropped, the old directory removed.
	if _, err := Write(dir, map[string]File{"a": {Data: []byte("one"), Mode: 0o644}, "c": {Data: []byte("3"), Mode: 0o644}}); err != nil {
		t.Fatal(err)
	}
	if testutil.ReadFile(t, filepath.Join(dir, "a")) != "one" || testutil.ReadFile(t, filepath.Join(dir, "c")) != "3" {
		t.Error("update not visible")
	}
	if _, err := os.Lstat(filepath.Join(dir, "sub")); !os.IsNotExist(err) {
		t.Errorf("dropped name still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, first)); !os.IsNotExist(err) {
		t.Errorf("old timestamped directory %s not removed", first)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 4 { // ..<ts>, ..data, a, c
		t.Errorf("entries = %v", names)
	}
}

// A reader never sees a file of one version beside a file of another:
// both files are read through the same ..data.
func TestWriteReadersSeeOneVersion(t *testing.T) {
	dir := t.TempDir()
	payload := func(v string) map[string]File {
		return map[string]File{"x": {Data: []byte(v), Mode: 0o644}, "y": {Data: []byte(v), Mode: 0o644}}
	}
	if _, err := Write(dir, payload("0")); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var torn atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			data, err := os.Readlink(filepath.Join(dir, DataDir))
			if err != nil {
				continue
			}
			x, err1 := os.ReadFile(filepath.Join(dir, data, "x"))
			y, err2 := os.ReadFile(filepath.Join(dir, data, "y"))
			if err1 == nil && err2 == nil && string(x) != string(y) {
				torn.Add(1)
			}
		}
	}()
	for i := range 200 {
		if _, err := Write(dir, payload(strings.Repeat("v", i+1))); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if torn.Load() != 0 {
		t.Errorf("%d reads saw two versions", torn.Load())
	}
}

func TestWriteRejectsHostilePaths(t *testing.T) {
	for _, p := range []string{"", "/etc/passwd", "../escape", "a/../../b", "..data", "..hidden", "a/../b", ".", "./..x", "a\x00b"} {
		if _, err := Write(t.TempDir(), map[string]File{p: {Data: []byte("x"), Mode: 0o644}}); err == nil {
			t.Errorf("path %q accepted", p)
		}
	}
}

// "./a" is "a" (it was written but never linked), and two paths naming
// one file are refused ("a/../b" and "b" were written to one file).
func TestWriteCleansPaths(t *testing.T) {
	dir := t.TempDir()
	if _, err := Write(dir, map[string]File{"./a": {Data: []byte("x"), Mode: 0o644}, "b//c": {Data: []byte("y"), Mode: 0o644}}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"a": "x", "b/c": "y"} {
		if got, err := os.ReadFile(filepath.Join(dir, p)); err != nil || string(got) != want {
			t.Errorf("%s = %q, %v", p, got, err)
		}
	}
	if _, err := Write(t.TempDir(), map[string]File{"a/./b": {Data: []byte("x")}, "a/b": {Data: []byte("y")}}); err == nil || !strings.Contains(err.Error(), "name the same file") {
		t.Errorf("two paths for one file: %v", err)
	}
}

func TestDownwardAPIPayload(t *testing.T) {
	mode := int32(0o400)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "prod", UID: "u-1",
			Labels: map[string]string{"tier": "front", "app": "web"}, Annotations: map[string]string{"note": `say "hi"`}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{
			Limits:   v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")},
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")},
		}}}},
	}
	items := []v1.DownwardAPIVolumeFile{
		{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
		{Path: "annotations", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.annotations"}},
		{Path: "meta/name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}, Mode: &mode},
		{Path: "tier", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['tier']"}},
		{Path: "mem_mi", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}},
		{Path: "cpu_m", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "requests.cpu", Divisor: resource.MustParse("1m")}},
		{Path: "cpu_limit", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu"}},
	}
	got, err := DownwardAPIPayload(pod, items, nil, v1.ResourceList{v1.ResourceCPU: resource.MustParse("4")})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"labels": "app=\"web\"\ntier=\"front\"", "annotations": `note="say \"hi\""`, "meta/name": "web", "tier": "front",
		"mem_mi": "64", "cpu_m": "250", "cpu_limit": "4",
	}
	for p, w := range want {
		if string(got[p].Data) != w {
			t.Errorf("%s = %q, want %q", p, got[p].Data, w)
		}
	}
	if got["meta/name"].Mode != 0o400 || got["labels"].Mode != 0o644 {
		t.Errorf("modes %v %v", got["meta/name"].Mode, got["labels"].Mode)
	}
	for _, bad := range []v1.DownwardAPIVolumeFile{
		{Path: "x", FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}},
		{Path: "x", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "nope", Resource: "limits.cpu"}},
		{Path: "x", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.gpu"}},
		{Path: "x"},
	} {
		if _, err := DownwardAPIPayload(pod, []v1.DownwardAPIVolumeFile{bad}, nil, nil); err == nil {
			t.Errorf("item %+v accepted", bad)
		}
	}
}
