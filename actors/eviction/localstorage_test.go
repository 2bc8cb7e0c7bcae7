package eviction

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

func withEmptyDir(p *v1.Pod, name, medium, limit string) *v1.Pod {
	ed := &v1.EmptyDirVolumeSource{Medium: v1.StorageMedium(medium)}
	if limit != "" {
		q := resource.MustParse(limit)
		ed.SizeLimit = &q
	}
	p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{EmptyDir: ed}})
	return p
}

func withEphemeralLimit(p *v1.Pod, limit string) *v1.Pod {
	c := &p.Spec.Containers[0]
	if c.Resources.Limits == nil {
		c.Resources.Limits = v1.ResourceList{}
	}
	c.Resources.Limits[v1.ResourceEphemeralStorage] = resource.MustParse(limit)
	return p
}

// The kubelet's three local-storage checks, in its order, with its
// messages; usage at the limit is not over it.
func TestLocalStorageViolation(t *testing.T) {
	for _, tt := range []struct {
		name      string
		pod       *v1.Pod
		stats     PodStats
		dedicated bool
		want      string
	}{
		{"emptyDir over its sizeLimit", withEmptyDir(pod("p", 0, ""), "scratch", "", "1Mi"),
			PodStats{Volumes: map[string]uint64{"scratch": 2 * mi}}, false, `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `},
		{"emptyDir at its sizeLimit", withEmptyDir(pod("p", 0, ""), "scratch", "", "1Mi"),
			PodStats{Volumes: map[string]uint64{"scratch": mi}}, false, ""},
		{"emptyDir without a sizeLimit", withEmptyDir(pod("p", 0, ""), "scratch", "", ""),
			PodStats{Volumes: map[string]uint64{"scratch": 100 * mi}}, false, ""},
		{"memory emptyDir over its sizeLimit", withEmptyDir(pod("p", 0, ""), "shm", "Memory", "1Mi"),
			PodStats{Volumes: map[string]uint64{"shm": 2 * mi}}, false, `Usage of EmptyDir volume "shm" exceeds the limit "1Mi". `},
		{"pod total over the containers' limits", withEmptyDir(withEphemeralLimit(pod("p", 0, ""), "10Mi"), "scratch", "", ""),
			PodStats{Volumes: map[string]uint64{"scratch": 8 * mi}, Containers: []ContainerStats{{Name: "c", Rootfs: mi, Logs: 2 * mi}}},
			false, "Pod ephemeral local storage usage exceeds the total limit of containers 10Mi. "},
		{"memory emptyDir not in the pod total", withEmptyDir(withEphemeralLimit(pod("p", 0, ""), "10Mi"), "shm", "Memory", ""),
			PodStats{Volumes: map[string]uint64{"shm": 50 * mi}, Containers: []ContainerStats{{Name: "c", Rootfs: mi}}}, false, ""},
		{"container over its limit", func() *v1.Pod {
			p := withEphemeralLimit(pod("p", 0, ""), "10Mi")
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "d"})
			return p
		}(), PodStats{Containers: []ContainerStats{{Name: "c", Rootfs: 6 * mi, Logs: 5 * mi}}}, false,
			"Pod ephemeral local storage usage exceeds the total limit of containers 10Mi. "},
		{"dedicated image filesystem: the writable layer does not count for the container", func() *v1.Pod {
			p := withEphemeralLimit(pod("p", 0, ""), "10Mi")
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "d", Resources: v1.ResourceRequirements{
				Limits: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("100Mi")}}})
			return p
		}(), PodStats{Containers: []ContainerStats{{Name: "c", Rootfs: 60 * mi, Logs: 5 * mi}}}, true, ""},
		{"container over its limit, the pod under its total", func() *v1.Pod {
			p := withEphemeralLimit(pod("p", 0, ""), "10Mi")
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "d", Resources: v1.ResourceRequirements{
				Limits: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("100Mi")}}})
			return p
		}(), PodStats{Containers: []ContainerStats{{Name: "c", Rootfs: 6 * mi, Logs: 5 * mi}}}, false,
			`Container c exceeded its local ephemeral storage limit "10Mi". `},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := localStorageViolation(tt.pod, tt.stats, tt.dedicated); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// Disk ranking counts writable layers, logs and disk emptyDirs; with a
// dedicated image filesystem nodefs ranks by logs and volumes only.
func TestRankDisk(t *testing.T) {
	stats := map[types.UID]PodStats{
		"layer":  {Containers: []ContainerStats{{Name: "c", Rootfs: 300 * mi}}},
		"logs":   {Containers: []ContainerStats{{Name: "c", Logs: 200 * mi}}},
		"volume": {Volumes: map[string]uint64{"v": 100 * mi}},
		"memory": {Volumes: map[string]uint64{"m": 900 * mi}},
	}
	mk := func() []*v1.Pod {
		return []*v1.Pod{withEmptyDir(pod("memory", 0, ""), "m", "Memory", ""), withEmptyDir(pod("volume", 0, ""), "v", "", ""),
			pod("logs", 0, ""), pod("layer", 0, "")}
	}
	pods := mk()
	rank(SignalNodeFsAvailable, pods, stats, false)
	if got := names(pods); !slices.Equal(got, []string{"layer", "logs", "volume", "memory"}) {
		t.Fatalf("nodefs rank = %v", got)
	}
	pods = mk()
	rank(SignalNodeFsAvailable, pods, stats, true)
	if got := names(pods); !slices.Equal(got, []string{"logs", "volume", "memory", "layer"}) {
		t.Fatalf("nodefs rank with a dedicated imagefs = %v", got)
	}
	pods = mk()
	rank(SignalImageFsAvailable, pods, stats, true)
	if got := names(pods)[0]; got != "layer" {
		t.Fatalf("imagefs rank with a dedicated imagefs starts with %s", got)
	}
	// Inode signals rank by inodes: many small files first.
	inodes := map[types.UID]PodStats{
		"layer":  {Containers: []ContainerStats{{Name: "c", Rootfs: 300 * mi, RootfsInodes: 3}}},
		"logs":   {Containers: []ContainerStats{{Name: "c", Logs: mi, LogsInodes: 20}}},
		"volume": {Volumes: map[string]uint64{"v": mi}, VolumeInodes: map[string]uint64{"v": 50000}},
		"memory": {Volumes: map[string]uint64{"m": mi}, VolumeInodes: map[string]uint64{"m": 90000}},
	}
	pods = mk()
	rank(SignalNodeFsInodesFree, pods, inodes, false)
	if got := names(pods); !slices.Equal(got, []string{"volume", "logs", "layer", "memory"}) {
		t.Fatalf("nodefs.inodesFree rank = %v", got)
	}
}

// NodeStats measures each pod's emptyDirs and each container's logs
// under the pods and logs directories.
func TestNodeStatsLocalStorage(t *testing.T) {
	root := t.TempDir()
	write := func(path string, n int) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pods, logs := filepath.Join(root, "pods"), filepath.Join(root, "logs")
	write(filepath.Join(pods, "uid-1", "volumes", "emptydir", "scratch", "a", "big"), 3*mi)
	write(filepath.Join(pods, "uid-1", "volumes", "emptydir", "other", "small"), 4096)
	write(filepath.Join(logs, "default_web_uid-1", "app", "0.log"), mi)
	write(filepath.Join(logs, "default_web_uid-1", "app", "1.log"), mi)
	write(filepath.Join(logs, "default_web_uid-1", "side", "0.log"), 8192)
	if err := os.MkdirAll(filepath.Join(pods, "uid-2"), 0o755); err != nil { // no emptyDir
		t.Fatal(err)
	}
	s, err := NodeStats{RootDir: root, PodsDir: pods, PodLogsDir: logs}.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ps, ok := s.Pods["uid-1"]
	if !ok {
		t.Fatalf("no stats for uid-1: %+v", s.Pods)
	}
	if v := ps.Volumes["scratch"]; v < 3*mi || v > 3*mi+64*1024 {
		t.Errorf("scratch = %d, want about 3Mi", v)
	}
	if n := ps.VolumeInodes["scratch"]; n != 3 { // scratch, a, big
		t.Errorf("scratch inodes = %d, want 3", n)
	}
	if v := ps.Volumes["other"]; v == 0 || v > 64*1024 {
		t.Errorf("other = %d, want a few KiB", v)
	}
	var app, side *ContainerStats
	for i := range ps.Containers {
		switch ps.Containers[i].Name {
		case "app":
			app = &ps.Containers[i]
		case "side":
			side = &ps.Containers[i]
		}
	}
	if app == nil || app.Logs < 2*mi || app.LogsInodes != 3 || side == nil || side.Logs == 0 {
		t.Fatalf("containers %+v, want app's two logs and side's", ps.Containers)
	}
	if _, ok := s.Pods["uid-2"]; ok {
		t.Errorf("a pod without emptyDirs or logs got stats: %+v", s.Pods["uid-2"])
	}
}

// A hostile number of files: the walk stops at its limit with an error
// naming it, and what it counted is kept.
func TestUsageWalkBounded(t *testing.T) {
	dir := t.TempDir()
	for i := range 50 {
		if err := os.WriteFile(filepath.Join(dir, "f"+strconv.Itoa(i)), make([]byte, 4096), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w := &usageWalker{ctx: context.Background(), left: 10}
	n, inodes, err := w.du(dir)
	if err == nil || !strings.Contains(err.Error(), "more than 1048576 files and directories in one reading (the limit)") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("err %v, want the limit named", err)
	}
	if n == 0 || inodes != 10 {
		t.Errorf("counted %d bytes, %d inodes before the limit: want what was counted kept (10 entries)", n, inodes)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w = &usageWalker{ctx: ctx, left: maxUsageEntries}
	if _, _, err := w.du(dir); err == nil || !strings.Contains(err.Error(), "context canceled (a reading is bound to 30s)") {
		t.Fatalf("canceled walk: %v", err)
	}
}

// BenchmarkLocalStorageUsage measures one reading's walk of 100 pods'
// emptyDirs and logs, 50 files in each (10,000 files in all).
func BenchmarkLocalStorageUsage(b *testing.B) {
	root := b.TempDir()
	pods, logs := filepath.Join(root, "pods"), filepath.Join(root, "logs")
	for p := range 100 {
		uid := "uid-" + strconv.Itoa(p)
		vol := filepath.Join(pods, uid, "volumes", "emptydir", "scratch")
		log := filepath.Join(logs, "default_pod"+strconv.Itoa(p)+"_"+uid, "app")
		for _, d := range []string{vol, log} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		for f := range 50 {
			for _, d := range []string{vol, log} {
				if err := os.WriteFile(filepath.Join(d, strconv.Itoa(f)), make([]byte, 1024), 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	n := NodeStats{PodsDir: pods, PodLogsDir: logs}
	b.ResetTimer()
	for range b.N {
		s := Stats{Pods: map[types.UID]PodStats{}}
		if err := n.localStorage(context.Background(), &s); err != nil || len(s.Pods) != 100 {
			b.Fatalf("%d pods, %v", len(s.Pods), err)
		}
	}
}
