package mux

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/test/testutil"
)

// sink records what the mux emits.
type sink struct {
	testutil.Collector[messages.PodUpdate]
}

func (s *sink) out(u messages.PodUpdate) { s.Add(u) }

func (s *sink) take() []messages.PodUpdate { return s.Take() }

// summary renders updates as "OP:uid,uid" for compact comparison.
func summary(us []messages.PodUpdate) []string {
	var out []string
	for _, u := range us {
		s := u.Op.String() + ":"
		for i, p := range u.Pods {
			if i > 0 {
				s += ","
			}
			s += string(p.UID)
		}
		out = append(out, s)
	}
	return out
}

var base = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func pod(uid, name string, mods ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			UID: types.UID(uid), Name: name, Namespace: "default",
			CreationTimestamp: metav1.NewTime(base),
		},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

func created(sec int) func(*v1.Pod) {
	return func(p *v1.Pod) { p.CreationTimestamp = metav1.NewTime(base.Add(time.Duration(sec) * time.Second)) }
}
func image(img string) func(*v1.Pod) { return func(p *v1.Pod) { p.Spec.Containers[0].Image = img } }
func phase(ph v1.PodPhase) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Status.Phase = ph }
}
func deleting(p *v1.Pod) {
	t := metav1.NewTime(base)
	g := int64(30)
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &t, &g
}

func set(pods ...*v1.Pod) messages.PodUpdate {
	return messages.PodUpdate{Op: messages.OpSet, Pods: pods}
}
func op(o messages.Op, pods ...*v1.Pod) messages.PodUpdate {
	return messages.PodUpdate{Op: o, Pods: pods}
}

func TestMergeOps(t *testing.T) {
	tests := []struct {
		name   string
		before []messages.PodUpdate // applied to source "a", output ignored
		in     messages.PodUpdate
		want   []string
	}{
		{"set on empty adds, sorted by creation",
			nil, set(pod("2", "b", created(5)), pod("1", "a", created(9)), pod("3", "c", created(1))),
			[]string{"ADD:3,2,1"}},
		{"empty first set emits nothing",
			nil, set(), nil},
		{"set unchanged emits nothing",
			[]messages.PodUpdate{set(pod("1", "a"))}, set(pod("1", "a")), nil},
		{"set without a pod removes it",
			[]messages.PodUpdate{set(pod("1", "a"), pod("2", "b"))}, set(pod("2", "b")), []string{"REMOVE:1"}},
		{"set with spec change updates",
			[]messages.PodUpdate{set(pod("1", "a"))}, set(pod("1", "a", image("nginx"))), []string{"UPDATE:1"}},
		{"set with status-only change reconciles",
			[]messages.PodUpdate{set(pod("1", "a"))}, set(pod("1", "a", phase(v1.PodRunning))), []string{"RECONCILE:1"}},
		{"set with deletion timestamp deletes",
			[]messages.PodUpdate{set(pod("1", "a"))}, set(pod("1", "a", deleting)), []string{"DELETE:1"}},
		{"set replacing a pod under the same name removes then adds",
			[]messages.PodUpdate{set(pod("1", "a"))}, set(pod("9", "a")), []string{"REMOVE:1", "ADD:9"}},
		{"set mixing everything groups per op",
			[]messages.PodUpdate{set(pod("1", "a"), pod("2", "b"), pod("3", "c"), pod("4", "d"))},
			set(pod("2", "b", image("x")), pod("3", "c", phase(v1.PodRunning)), pod("4", "d", deleting), pod("5", "e")),
			[]string{"REMOVE:1", "ADD:5", "UPDATE:2", "DELETE:4", "RECONCILE:3"}},
		{"add new pod",
			nil, op(messages.OpAdd, pod("1", "a")), []string{"ADD:1"}},
		{"add known pod unchanged emits nothing",
			[]messages.PodUpdate{op(messages.OpAdd, pod("1", "a"))}, op(messages.OpAdd, pod("1", "a")), nil},
		{"update with spec change",
			[]messages.PodUpdate{op(messages.OpAdd, pod("1", "a"))}, op(messages.OpUpdate, pod("1", "a", image("x"))), []string{"UPDATE:1"}},
		{"update with label change",
			[]messages.PodUpdate{op(messages.OpAdd, pod("1", "a"))},
			op(messages.OpUpdate, pod("1", "a", func(p *v1.Pod) { p.Labels = map[string]string{"k": "v"} })), []string{"UPDATE:1"}},
		{"update with only status is a reconcile",
			[]messages.PodUpdate{op(messages.OpAdd, pod("1", "a"))}, op(messages.OpUpdate, pod("1", "a", phase(v1.PodFailed))), []string{"RECONCILE:1"}},
		{"update of unknown pod adds it",
			nil, op(messages.OpUpdate, pod("1", "a")), []string{"ADD:1"}},
		{"delete marks graceful deletion",
			[]messages.PodUpdate{op(messages.OpAdd, pod("1", "a"))}, op(messages.OpDelete, pod("1", "a", deleting)), []string{"DELETE:1"}},
		{"delete twice emits once",
			[]messages.PodUpdate{op(messages.OpAdd, pod("1", "a")), op(messages.OpDelete, pod("1", "a", deleting))},
			op(messages.OpDelete, pod("1", "a", deleting)), nil},
		{"remove known pod",
			[]messages.PodUpdate{op(messages.OpAdd, pod("1", "a"), pod("2", "b"))}, op(messages.OpRemove, pod("1", "a")), []string{"REMOVE:1"}},
		{"remove by name when UID is empty",
			[]messages.PodUpdate{op(messages.OpAdd, pod("1", "a"))}, op(messages.OpRemove, pod("", "a")), []string{"REMOVE:1"}},
		{"remove unknown pod emits nothing",
			nil, op(messages.OpRemove, pod("1", "a")), nil},
		{"reconcile op with status change",
			[]messages.PodUpdate{op(messages.OpAdd, pod("1", "a"))}, op(messages.OpReconcile, pod("1", "a", phase(v1.PodRunning))), []string{"RECONCILE:1"}},
		{"same name twice in one source keeps the first",
			nil, op(messages.OpAdd, pod("1", "a"), pod("2", "a")), []string{"ADD:1"}},
		{"same UID twice in one update keeps the first",
			nil, set(pod("1", "a"), pod("1", "a", image("x"))), []string{"ADD:1"}},
		{"pod without UID is rejected",
			nil, op(messages.OpAdd, pod("", "a"), pod("2", "b")), []string{"ADD:2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &sink{}
			m := New(s.out)
			in := m.Channel("a")
			for _, u := range tt.before {
				in(u)
			}
			s.take()
			in(tt.in)
			got := summary(s.take())
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMergeAnnotatesSourceAndCopies(t *testing.T) {
	s := &sink{}
	m := New(s.out)
	p := pod("1", "a")
	m.Channel(messages.SourceFile)(set(p))
	got := s.take()
	if len(got) != 1 || got[0].Source != messages.SourceFile {
		t.Fatalf("got %v, want one update from source file", got)
	}
	out := got[0].Pods[0]
	if out.Annotations[messages.ConfigSourceAnnotation] != messages.SourceFile {
		t.Errorf("source annotation = %q, want %q", out.Annotations[messages.ConfigSourceAnnotation], messages.SourceFile)
	}
	if out == p || p.Annotations != nil {
		t.Errorf("mux must copy pods, not alias or modify the input")
	}
	out.Spec.Containers[0].Image = "mutated"
	m.Channel(messages.SourceFile)(set(pod("1", "a")))
	if got := summary(s.take()); got != nil {
		t.Errorf("mutating an emitted pod changed the mux's state: %v", got)
	}
}

func TestDuplicateAcrossSources(t *testing.T) {
	tests := []struct {
		name   string
		second *v1.Pod
	}{
		{"same UID", pod("1", "other")},
		{"same namespace/name", pod("2", "a")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &sink{}
			r := &testutil.Recorder{}
			m := New(s.out)
			m.SetRecorder(r)
			file, remote := m.Channel(messages.SourceFile), m.Channel(messages.SourceRemote)
			file(set(pod("1", "a")))
			remote(set(tt.second, pod("3", "c")))
			if got, want := summary(s.take()), []string{"ADD:1", "ADD:3"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
			if ev := r.Events(); len(ev) != 1 || ev[0].Type != "Warning" || ev[0].Reason != "DuplicatePod" || ev[0].Pod.Name != tt.second.Name {
				t.Errorf("events %v, want one Warning DuplicatePod for %s", ev, tt.second.Name)
			}
			// The first stays: removing the duplicate from its source changes nothing.
			remote(set(pod("3", "c")))
			if got := summary(s.take()); got != nil {
				t.Errorf("after dropping the duplicate got %v, want nothing", got)
			}
			// Once the first is gone, the other source may deliver it.
			file(set())
			remote(set(tt.second, pod("3", "c")))
			if got, want := summary(s.take()), []string{"REMOVE:1", "ADD:" + string(tt.second.UID)}; !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestReadiness(t *testing.T) {
	s := &sink{}
	m := New(s.out)
	var mu sync.Mutex
	var readies []messages.SourcesReady
	m.OnReady(func(r messages.SourcesReady) {
		mu.Lock()
		defer mu.Unlock()
		readies = append(readies, r)
	})
	if m.SourcesReady() {
		t.Fatal("ready with no sources registered")
	}
	file, remote := m.Channel(messages.SourceFile), m.Channel(messages.SourceRemote)
	file(set())
	if !m.SourcesReady(messages.SourceFile) {
		t.Error("file source not ready after its first (empty) snapshot")
	}
	if m.SourcesReady(messages.SourceRemote) || m.SourcesReady(messages.SourceAll) || len(readies) != 0 {
		t.Fatal("all sources ready before the remote source delivered")
	}
	remote(op(messages.OpAdd, pod("1", "a")))
	if !m.SourcesReady() || !m.SourcesReady(messages.SourceFile, messages.SourceRemote) {
		t.Error("not ready after every source delivered")
	}
	file(set())
	want := []messages.SourcesReady{{Sources: []string{messages.SourceFile, messages.SourceRemote}}}
	if !reflect.DeepEqual(readies, want) {
		t.Errorf("OnReady calls %v, want %v", readies, want)
	}
	late := 0
	m.OnReady(func(messages.SourcesReady) { late++ })
	if late != 1 {
		t.Errorf("OnReady after readiness called %d times, want 1", late)
	}
}

func TestConcurrentSources(t *testing.T) {
	s := &sink{}
	m := New(s.out)
	var wg sync.WaitGroup
	for i := range 4 {
		in := m.Channel(fmt.Sprintf("src%d", i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				in(set(pod(fmt.Sprintf("%d-%d", i, j), fmt.Sprintf("p%d-%d", i, j))))
			}
		}()
	}
	wg.Wait()
	adds := 0
	for _, u := range s.take() {
		if u.Op == messages.OpAdd {
			adds += len(u.Pods)
		}
	}
	if adds != 200 || !m.SourcesReady() {
		t.Errorf("adds = %d (want 200), ready = %v", adds, m.SourcesReady())
	}
}

// Replay re-delivers every source's pods as ADDs (oldest first), for a
// restarted supervisor, and says whether the sources are ready.
func TestReplay(t *testing.T) {
	s := &sink{}
	m := New(s.out)
	file, remote := m.Channel(messages.SourceFile), m.Channel(messages.SourceRemote)
	remote(set(pod("2", "b", created(2)), pod("1", "a", created(1))))
	if _, ready := m.Replay(); ready {
		t.Fatal("ready before the file source delivered")
	}
	file(set(pod("3", "c")))
	remote(op(messages.OpRemove, pod("2", "b", created(2))))
	s.take()

	ready, ok := m.Replay()
	if !ok || !reflect.DeepEqual(ready.Sources, []string{messages.SourceFile, messages.SourceRemote}) {
		t.Fatalf("Replay ready = %v %v", ready, ok)
	}
	got := summary(s.take())
	want := []string{"ADD:3", "ADD:1"} // file (c), then remote (a)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("replayed %v, want %v", got, want)
	}
}
