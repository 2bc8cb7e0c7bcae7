package agent

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/node/allocatable"
)

func TestParseFlags(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	full := file("full.yaml", `nodeName: from-file
nodeLabels: {zone: a, role: edge}
rootDir: /var/lib/from-file
maxPods: 20
syncFrequency: 30s
relistPeriod: 250ms
nodeStatusUpdateFrequency: 5s
runtimeRequestTimeout: 1m
healthzPort: 0
nats:
  url: nats://file:4222
  user: node
`)
	unknown := file("unknown.yaml", "nodeName: n1\nmaxPod: 3\n")
	badDuration := file("bad-duration.yaml", "syncFrequency: soon\n")
	root := filepath.Join(dir, "root")

	tests := []struct {
		name    string
		args    []string
		wantErr []string // all in the error
		check   func(t *testing.T, c Config)
	}{
		{
			name: "kubelet flag names",
			args: []string{"--node-name", "n1", "--root-dir", root, "--pod-manifest-path", "/etc/manifests",
				"--container-runtime-endpoint", "unix:///run/containerd/containerd.sock", "--max-pods", "7",
				"--node-labels", "zone=a, role=edge", "--node-ip", "10.0.0.5", "--sync-frequency", "30s",
				"--node-status-update-frequency", "2s", "--healthz-port", "0", "--healthz-bind-address", "0.0.0.0",
				"--max-interactive-sessions", "4", "--streaming-connection-idle-timeout", "30m"},
			check: func(t *testing.T, c Config) {
				want := Config{NodeName: "n1", RootDir: root, PodManifestPath: "/etc/manifests",
					ContainerRuntimeEndpoint: "unix:///run/containerd/containerd.sock", Isolation: "auto", MaxPods: 7, MaxParallelRuntimeCalls: defaultMaxParallelRuntimeCalls, RuntimeCallLimit: RuntimeCallLimitFixed,
					NodeLabels: map[string]string{"zone": "a", "role": "edge"}, NodeIP: "10.0.0.5",
					SyncFrequency: 30 * time.Second, NodeStatusUpdateFrequency: 2 * time.Second, HealthzPort: 0,
					HealthzBindAddress: "0.0.0.0", PodLogsDir: filepath.Join(root, "pod-logs"),
					RelistPeriod: time.Second, RuntimeRequestTimeout: 2 * time.Minute,
					AllowExec: true, AllowLogs: true, EnableDebuggingHandlers: true,
					ContainerLogMaxSize: "10Mi", ContainerLogMaxFiles: 5, ContainerLogMonitorInterval: 10 * time.Second,
					ImageGCHighThresholdPercent: 85, ImageGCLowThresholdPercent: 80, ImageMinimumGCAge: 2 * time.Minute, ImageGCPeriod: 5 * time.Minute,
					EvictionPressureTransitionPeriod: 5 * time.Minute, EvictionMonitoringInterval: 10 * time.Second, LocalStorageCapacityIsolation: true,
					MaxInteractiveSessions: 4, StreamingConnectionIdleTimeout: 30 * time.Minute,
					EvictionHard: allocatable.DefaultEvictionHard, EnforceNodeAllocatable: "pods", CgroupsPerQOS: true, CgroupDriver: "cgroupfs", CgroupRoot: "/",
					NATS: NATSConfig{Host: "127.0.0.1", Port: 4222}}
				if !reflect.DeepEqual(c, want) {
					t.Errorf("config =\n%+v\nwant\n%+v", c, want)
				}
			},
		},
		{
			name: "nats flags",
			args: []string{"--node-name", "n1", "--root-dir", root, "--nats-url", "nats://a:4222,nats://b:4222", "--nats-creds", "/n1.creds"},
			check: func(t *testing.T, c Config) {
				if c.NATS.URL != "nats://a:4222,nats://b:4222" || c.NATS.CredsFile != "/n1.creds" {
					t.Errorf("nats = %+v", c.NATS)
				}
			},
		},
		{
			name: "nats replicas and placement",
			args: []string{"--node-name", "n1", "--root-dir", root, "--nats-replicas", "3", "--nats-placement-cluster", "east", "--nats-placement-tags", "ssd, zone:a"},
			check: func(t *testing.T, c Config) {
				want := wire.ProtocolSettings{Replicas: 3, Cluster: "east", Tags: []string{"ssd", "zone:a"}}
				if got := c.NATS.Protocol(); !reflect.DeepEqual(got, want) {
					t.Errorf("protocol settings = %+v, want %+v", got, want)
				}
			},
		},
		{name: "too many replicas", args: []string{"--node-name", "n1", "--nats-replicas", "7"}, wantErr: []string{"nats-replicas", "replicas 7", "1..5"}},
		{name: "label without value", args: []string{"--node-name", "n1", "--node-labels", "zone=a,edge"}, wantErr: []string{"--node-labels", `"edge" is not key=value`}},
		{name: "label without key", args: []string{"--node-name", "n1", "--node-labels", "=a"}, wantErr: []string{"--node-labels", `"=a"`}},
		{name: "bad max pods", args: []string{"--node-name", "n1", "--max-pods", "0"}, wantErr: []string{"max-pods", "must be positive"}},
		{name: "hostile runtime call bound", args: []string{"--node-name", "n1", "--max-parallel-runtime-calls", "99999999"}, wantErr: []string{"max-parallel-runtime-calls", "0 (unbounded) to 1024"}},
		{name: "unknown runtime call limit", args: []string{"--node-name", "n1", "--runtime-call-limit", strings.Repeat("x", 5000)}, wantErr: []string{"runtime-call-limit", `must be "adaptive" or "fixed"`}},
		{name: "negative runtime call bound", args: []string{"--node-name", "n1", "--max-parallel-runtime-calls", "-1"}, wantErr: []string{"max-parallel-runtime-calls"}},
		{name: "bad container log size", args: []string{"--node-name", "n1", "--container-log-max-size", "lots"}, wantErr: []string{"container-log-max-size", `"lots"`}},
		{name: "container log size zero", args: []string{"--node-name", "n1", "--container-log-max-size", "0"}, wantErr: []string{"container-log-max-size", "must be positive"}},
		{name: "one container log file", args: []string{"--node-name", "n1", "--container-log-max-files", "1"}, wantErr: []string{"container-log-max-files", "at least 2"}},
		{
			name: "image gc flags",
			args: []string{"--node-name", "n1", "--image-gc-high-threshold", "70", "--image-gc-low-threshold", "50", "--image-minimum-gc-age", "1m", "--image-maximum-gc-age", "168h"},
			check: func(t *testing.T, c Config) {
				if p := c.ImageGCPolicy(); p.HighThresholdPercent != 70 || p.LowThresholdPercent != 50 || p.MinAge != time.Minute || p.MaxAge != 168*time.Hour {
					t.Errorf("image GC policy = %+v", p)
				}
			},
		},
		{name: "hostile image gc threshold", args: []string{"--node-name", "n1", "--image-gc-high-threshold", "999999"}, wantErr: []string{"image-gc-high-threshold: 999999 must be between 0 and 100"}},
		{name: "image gc low over high", args: []string{"--node-name", "n1", "--image-gc-low-threshold", "90"}, wantErr: []string{"image-gc-low-threshold: 90 must be less than image-gc-high-threshold 85"}},
		{name: "hostile pod infra image", args: []string{"--node-name", "n1", "--pod-infra-container-image", strings.Repeat("a", 300) + ":1"}, wantErr: []string{"pod-infra-container-image: repository name must not be more than 255 characters"}},
		{name: "pod infra image not a reference", args: []string{"--node-name", "n1", "--pod-infra-container-image", "Pause:1"}, wantErr: []string{"pod-infra-container-image:", "must be lowercase"}},
		{name: "image gc period zero", args: []string{"--node-name", "n1", "--image-gc-period", "0s"}, wantErr: []string{"image-gc-period: must be positive, got 0s"}},
		{name: "image gc max age under min age", args: []string{"--node-name", "n1", "--image-maximum-gc-age", "1m"}, wantErr: []string{"image-maximum-gc-age: 1m0s must be greater than image-minimum-gc-age 2m0s"}},
		{
			name: "reservation flags",
			args: []string{"--node-name", "n1", "--system-reserved", "cpu=500m,memory=1Gi", "--kube-reserved", "memory=512Mi,pid=100",
				"--eviction-hard", "memory.available<100Mi", "--enforce-node-allocatable", "none", "--cgroups-per-qos=false", "--cgroup-driver", "systemd"},
			check: func(t *testing.T, c Config) {
				r, err := c.Reservations()
				if err != nil {
					t.Fatal(err)
				}
				capacity := v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi")}
				alloc := r.Allocatable(capacity)
				if cpu, mem := alloc[v1.ResourceCPU], alloc[v1.ResourceMemory]; cpu.Cmp(resource.MustParse("1500m")) != 0 || mem.Cmp(resource.MustParse("2460Mi")) != 0 {
					t.Errorf("allocatable = %v", alloc)
				}
				if c.EnforceNodeAllocatable != "none" || c.CgroupsPerQOS || c.CgroupDriver != "systemd" {
					t.Errorf("cgroup settings = %q %v %q", c.EnforceNodeAllocatable, c.CgroupsPerQOS, c.CgroupDriver)
				}
			},
		},
		{name: "hostile system-reserved", args: []string{"--node-name", "n1", "--system-reserved", "memory=" + strings.Repeat("9", 5000)}, wantErr: []string{"system-reserved: 5007 bytes, limit is 1024"}},
		{name: "unknown kube-reserved resource", args: []string{"--node-name", "n1", "--kube-reserved", "gpu=1"}, wantErr: []string{"kube-reserved: gpu: unknown resource"}},
		{name: "bad eviction-hard", args: []string{"--node-name", "n1", "--eviction-hard", "memory.available<lots"}, wantErr: []string{"eviction-hard: memory.available<lots"}},
		{name: "enforce system-reserved without its cgroup", args: []string{"--node-name", "n1", "--enforce-node-allocatable", "pods,system-reserved"}, wantErr: []string{"enforce-node-allocatable has system-reserved: system-reserved-cgroup: required"}},
		{name: "enforce an unknown target", args: []string{"--node-name", "n1", "--enforce-node-allocatable", "pods,everything"}, wantErr: []string{`enforce-node-allocatable: "everything": want none or a list`}},
		{name: "hostile enforce list", args: []string{"--node-name", "n1", "--enforce-node-allocatable", strings.Repeat("pods,", 100)}, wantErr: []string{"enforce-node-allocatable: 500 bytes, limit is 64"}},
		{name: "relative kube-reserved cgroup", args: []string{"--node-name", "n1", "--enforce-node-allocatable", "kube-reserved", "--kube-reserved-cgroup", "actorlet"}, wantErr: []string{`kube-reserved-cgroup: "actorlet": want an absolute cgroup path`}},
		{name: "relative cgroup root", args: []string{"--node-name", "n1", "--cgroup-root", "../x"}, wantErr: []string{`cgroup-root: "../x": want an absolute cgroup path`}},
		{name: "systemd driver on the process runtime", args: []string{"--node-name", "n1", "--cgroup-driver", "systemd"}, wantErr: []string{"cgroup-driver: systemd: the embedded process runtime takes cgroupfs paths only"}},
		{name: "bad cgroup driver", args: []string{"--node-name", "n1", "--cgroup-driver", "lxc"}, wantErr: []string{`cgroup-driver: "lxc": want cgroupfs or systemd`}},
		{name: "bad session limit", args: []string{"--node-name", "n1", "--max-interactive-sessions", "-3"}, wantErr: []string{"max-interactive-sessions", "must be positive"}},
		{name: "bad stream idle timeout", args: []string{"--node-name", "n1", "--streaming-connection-idle-timeout", "0s"}, wantErr: []string{"streaming-connection-idle-timeout", "must be positive"}},
		{name: "bad duration flag", args: []string{"--sync-frequency", "often"}, wantErr: []string{"sync-frequency"}},
		{name: "unknown flag", args: []string{"--pod-manifests", "/x"}, wantErr: []string{"pod-manifests"}},
		{name: "stray argument", args: []string{"--node-name", "n1", "run"}, wantErr: []string{`unexpected argument "run"`}},
		{
			name: "config file",
			args: []string{"--config", full},
			check: func(t *testing.T, c Config) {
				if c.NodeName != "from-file" || c.RootDir != "/var/lib/from-file" || c.MaxPods != 20 ||
					!reflect.DeepEqual(c.NodeLabels, map[string]string{"zone": "a", "role": "edge"}) ||
					c.SyncFrequency != 30*time.Second || c.RelistPeriod != 250*time.Millisecond ||
					c.NodeStatusUpdateFrequency != 5*time.Second || c.RuntimeRequestTimeout != time.Minute ||
					c.HealthzPort != 0 || c.NATS.URL != "nats://file:4222" || c.NATS.User != "node" {
					t.Errorf("config from file = %+v", c)
				}
				if c.HealthzBindAddress != "127.0.0.1" || c.NATS.Port != 4222 {
					t.Errorf("defaults not kept for keys the file leaves out: %+v", c)
				}
			},
		},
		{
			name: "flags win over the file",
			args: []string{"--node-name", "from-flag", "--config", full, "--max-pods", "3", "--node-labels", "zone=b", "--sync-frequency", "10s", "--nats-url", "nats://flag:4222"},
			check: func(t *testing.T, c Config) {
				if c.NodeName != "from-flag" || c.MaxPods != 3 || !reflect.DeepEqual(c.NodeLabels, map[string]string{"zone": "b"}) ||
					c.SyncFrequency != 10*time.Second || c.NATS.URL != "nats://flag:4222" {
					t.Errorf("flags did not win: %+v", c)
				}
				if c.RootDir != "/var/lib/from-file" || c.RelistPeriod != 250*time.Millisecond || c.NATS.User != "node" {
					t.Errorf("file values not given as flags were lost: %+v", c)
				}
			},
		},
		{name: "unknown key in the file", args: []string{"--config", unknown}, wantErr: []string{unknown, `unknown field "maxPod"`}},
		{name: "bad duration in the file", args: []string{"--config", badDuration}, wantErr: []string{badDuration, "soon"}},
		{name: "missing file", args: []string{"--config", filepath.Join(dir, "nope.yaml")}, wantErr: []string{"--config", "nope.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseFlags(tt.args)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("ParseFlags(%v) = nil error, want one with %q", tt.args, tt.wantErr)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseFlags(%v): %v", tt.args, err)
			}
			tt.check(t, c)
		})
	}
}

func TestParseTaints(t *testing.T) {
	got, err := ParseTaints("dedicated=ml:NoSchedule, maint:NoExecute")
	if err != nil || len(got) != 2 || got[0].Key != "dedicated" || got[0].Value != "ml" || got[0].Effect != "NoSchedule" || got[1].Key != "maint" || got[1].Effect != "NoExecute" {
		t.Fatalf("ParseTaints = %+v, %v", got, err)
	}
	for _, bad := range []string{"nokey", "k=v:Sometimes", "bad key:NoSchedule", "k=" + strings.Repeat("v", 100) + ":NoSchedule"} {
		if _, err := ParseTaints(bad); err == nil {
			t.Errorf("ParseTaints(%q) accepted", bad)
		}
	}
}

// An agent asked for the systemd cgroup driver on a host without systemd
// refuses to start, saying why.
func TestStartRefusesSystemdDriverWithoutSystemd(t *testing.T) {
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		t.Skip("systemd runs here")
	}
	cfg := DefaultConfig()
	cfg.NodeName, cfg.RootDir, cfg.HealthzPort = "n1", t.TempDir(), 0
	cfg.CgroupDriver = "systemd"
	a := &Agent{cfg: cfg}
	if _, err := a.startCgroups(); err == nil || !strings.Contains(err.Error(), "systemd is not running as PID 1") {
		t.Errorf("startCgroups with the systemd driver: %v", err)
	}
}
