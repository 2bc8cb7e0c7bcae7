package agent

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/actorlet/actorlet/messages"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/distribution/reference"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"github.com/actorlet/actorlet/actors/eviction"
	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/cri/cm"
	"github.com/actorlet/actorlet/cri/crilogs"
	"github.com/actorlet/actorlet/cri/imagegc"
	"github.com/actorlet/actorlet/cri/procruntime"
	"github.com/actorlet/actorlet/messages/podrules"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/node/allocatable"
)

// Config is everything the agent can be told, by flag or by the --config
// file. Flags carry the kubelet's names where one exists; a flag given on
// the command line wins over the file.
type Config struct {
	NodeName                 string            `json:"nodeName"`
	NodeLabels               map[string]string `json:"nodeLabels"`
	RegisterWithTaints       []v1.Taint        `json:"registerWithTaints"`
	NodeIP                   string            `json:"nodeIP"`
	RootDir                  string            `json:"rootDir"`
	PodManifestPath          string            `json:"podManifestPath"`
	ContainerRuntimeEndpoint string            `json:"containerRuntimeEndpoint"`
	// Isolation and HostFilesystem configure the embedded process runtime
	// (no ContainerRuntimeEndpoint): procruntime.ParseIsolation's values,
	// and whether a runtime without filesystem views runs volumes on the
	// host's filesystem instead of refusing them.
	Isolation             string        `json:"isolation"`
	HostFilesystem        bool          `json:"hostFilesystem"`
	RuntimeRequestTimeout time.Duration `json:"runtimeRequestTimeout"`
	MaxPods               int           `json:"maxPods"`
	// MaxParallelRuntimeCalls bounds the sandbox and container creations,
	// starts and removals in flight in the runtime (0: unbounded).
	MaxParallelRuntimeCalls int `json:"maxParallelRuntimeCalls"`
	// RuntimeCallLimit is how that bound is kept: "fixed"
	// (MaxParallelRuntimeCalls itself, the default) or "adaptive" (an
	// in-flight limit that follows the runtime's latency,
	// MaxParallelRuntimeCalls its cap). Fixed is the default because on the
	// process runtime of a loaded 2-core machine the adaptive limit fell to
	// 1–3 and the 100-pod start took longer (docs/benchmarks.md).
	RuntimeCallLimit string `json:"runtimeCallLimit"`
	PodLogsDir       string `json:"podLogsDir"`
	// Container log rotation, as the kubelet's flags of the same names.
	ContainerLogMaxSize         string        `json:"containerLogMaxSize"`
	ContainerLogMaxFiles        int           `json:"containerLogMaxFiles"`
	ContainerLogMonitorInterval time.Duration `json:"containerLogMonitorInterval"`
	// Image garbage collection, as the kubelet's flags of the same names.
	ImageGCHighThresholdPercent int           `json:"imageGCHighThresholdPercent"`
	ImageGCLowThresholdPercent  int           `json:"imageGCLowThresholdPercent"`
	ImageMinimumGCAge           time.Duration `json:"imageMinimumGCAge"`
	ImageMaximumGCAge           time.Duration `json:"imageMaximumGCAge"`
	// ImageGCPeriod is how often image GC runs (the kubelet's fixed 5
	// minutes; a flag here so that a short maximum age can be watched).
	ImageGCPeriod time.Duration `json:"imageGCPeriod"`
	// PodInfraContainerImage is the runtime's sandbox image, never
	// collected; empty: the one the runtime's configuration names
	// (containerd's sandbox_image), or the runtime pins it itself.
	PodInfraContainerImage string `json:"podInfraContainerImage"`

	// Reservations and QoS cgroups, as the kubelet's flags of the same
	// names (node/allocatable, cri/cm). SystemReserved and KubeReserved
	// are cpu=100m,memory=256Mi,ephemeral-storage=1Gi,pid=1000;
	// the eviction thresholds below
	// (EvictionHard's memory.available and nodefs.available) count in
	// Allocatable; EnforceNodeAllocatable is "none" or a list of
	// pods, system-reserved, kube-reserved (the last two limit
	// SystemReservedCgroup / KubeReservedCgroup, which must exist).
	SystemReserved         string `json:"systemReserved"`
	KubeReserved           string `json:"kubeReserved"`
	EnforceNodeAllocatable string `json:"enforceNodeAllocatable"`
	SystemReservedCgroup   string `json:"systemReservedCgroup"`
	KubeReservedCgroup     string `json:"kubeReservedCgroup"`
	CgroupsPerQOS          bool   `json:"cgroupsPerQOS"`
	CgroupDriver           string `json:"cgroupDriver"`
	CgroupRoot             string `json:"cgroupRoot"`

	// Node pressure and eviction, as the kubelet's flags of the same names
	// (thresholds as the flags' text: "memory.available<100Mi,...").
	// EvictionMemoryCgroup and EvictionMemoryCapacity confine
	// memory.available to one memory cgroup with a capacity of its own
	// (actors/eviction.NodeStats): tests, and edge boxes that watch only
	// the pods' share.
	EvictionHard                     string        `json:"evictionHard"`
	EvictionSoft                     string        `json:"evictionSoft"`
	EvictionSoftGracePeriod          string        `json:"evictionSoftGracePeriod"`
	EvictionMinimumReclaim           string        `json:"evictionMinimumReclaim"`
	EvictionMaxPodGracePeriod        int64         `json:"evictionMaxPodGracePeriod"`
	EvictionPressureTransitionPeriod time.Duration `json:"evictionPressureTransitionPeriod"`
	EvictionMonitoringInterval       time.Duration `json:"evictionMonitoringInterval"`
	EvictionMemoryCgroup             string        `json:"evictionMemoryCgroup"`
	EvictionMemoryCapacity           string        `json:"evictionMemoryCapacity"`
	// LocalStorageCapacityIsolation evicts pods over their emptyDir
	// sizeLimit or ephemeral-storage limits (the kubelet's setting of the
	// same name, default true).
	LocalStorageCapacityIsolation bool `json:"localStorageCapacityIsolation"`

	SyncFrequency             time.Duration `json:"syncFrequency"`
	RelistPeriod              time.Duration `json:"relistPeriod"`
	NodeStatusUpdateFrequency time.Duration `json:"nodeStatusUpdateFrequency"`

	HealthzBindAddress string `json:"healthzBindAddress"`
	HealthzPort        int    `json:"healthzPort"`

	// Commands this node serves (checked at the node, whatever the bus
	// permissions): AllowExec for exec, AllowLogs for logs.
	// EnableDebuggingHandlers=false turns both off, as the kubelet's flag.
	AllowExec               bool `json:"allowExec"`
	AllowLogs               bool `json:"allowLogs"`
	EnableDebuggingHandlers bool `json:"enableDebuggingHandlers"`

	// Interactive sessions (exec -it, attach, port-forward connections).
	MaxInteractiveSessions         int           `json:"maxInteractiveSessions"`
	StreamingConnectionIdleTimeout time.Duration `json:"streamingConnectionIdleTimeout"`

	NATS NATSConfig `json:"nats"`

	// Graceful node shutdown, as the kubelet's (0: off): on logind's
	// PrepareForShutdown the pods are terminated within
	// ShutdownGracePeriod, the last ShutdownGracePeriodCriticalPods of it
	// kept for critical pods (priority >= 2000000000), or by the finer
	// ShutdownGracePeriodByPodPriority (either, not both).
	ShutdownGracePeriod              time.Duration                      `json:"shutdownGracePeriod"`
	ShutdownGracePeriodCriticalPods  time.Duration                      `json:"shutdownGracePeriodCriticalPods"`
	ShutdownGracePeriodByPodPriority []ShutdownGracePeriodByPodPriority `json:"shutdownGracePeriodByPodPriority"`
	// SystemBusAddress is the D-Bus system bus logind is on (default:
	// DBUS_SYSTEM_BUS_ADDRESS, else /var/run/dbus/system_bus_socket). Not
	// settable from flags or the file: tests point agents at their own bus.
	SystemBusAddress string `json:"-"`

	// Runtime, when set, is used instead of ContainerRuntimeEndpoint or the
	// embedded process runtime: tests and benchmarks run agents on an
	// in-memory CRI runtime this way. Not settable from flags or the file.
	Runtime cri.Runtime `json:"-"`
	// ReceiverMiddleware is added to every actor of the tree (tracing, or
	// fault injection in tests). Not settable from flags or the file.
	ReceiverMiddleware []actor.ReceiverMiddleware `json:"-"`
}

// defaultMaxParallelRuntimeCalls is the default bound on runtime work in
// flight. Measured on containerd 1.6 (docs/benchmarks.md, 2026-11-25): 100
// pods reach Running in 13.5 s at 4 and 9.0 s at 8, against 8.1–8.8 s for
// the best raw CRI concurrency of the same runs; at 4 the runtime idles
// between calls that mostly wait (shim start, network set-up).
const defaultMaxParallelRuntimeCalls = 8

// maxCgroupRoot bounds --cgroup-root.
const maxCgroupRoot = 256

// Values of --runtime-call-limit.
const (
	RuntimeCallLimitAdaptive = "adaptive"
	RuntimeCallLimitFixed    = "fixed"
)

// maxParallelRuntimeCallsLimit is the largest bound --max-parallel-runtime-calls
// takes: past it the bound means nothing.
const maxParallelRuntimeCallsLimit = 1024

type NATSConfig struct {
	URL       string `json:"url"`
	User      string `json:"user"`
	Password  string `json:"password"`
	Token     string `json:"token"`
	CredsFile string `json:"credsFile"`
	TLSCA     string `json:"tlsCA"`
	TLSCert   string `json:"tlsCert"`
	TLSKey    string `json:"tlsKey"`
	// Host and Port of the embedded server's client listener.
	Host string `json:"host"`
	Port int    `json:"port"`
	// PasswordFile and TokenFile hold the password or token (never only
	// argv: flags show in ps). ACTORLET_NATS_PASSWORD and
	// ACTORLET_NATS_TOKEN work too.
	PasswordFile string `json:"passwordFile"`
	TokenFile    string `json:"tokenFile"`
	// EmbeddedTLSCert and EmbeddedTLSKey: the embedded server's TLS
	// certificate (--nats-tls-cert/--nats-tls-key without --nats-url).
	EmbeddedTLSCert string `json:"-"`
	EmbeddedTLSKey  string `json:"-"`
	// Replicas, PlacementCluster and PlacementTags are used only when this
	// agent is the first to create the bus buckets and stream; existing
	// ones keep the operator's settings (see actorletctl bootstrap).
	Replicas int `json:"replicas"`
	// LeafURL makes the embedded server a leaf node of the fleet's
	// cluster (an edge node that keeps working while cut off); LeafCreds
	// authenticates the uplink; HubDomain is the cluster's JetStream
	// domain (default "hub").
	LeafURL          string   `json:"leafURL"`
	LeafCreds        string   `json:"leafCreds"`
	HubDomain        string   `json:"hubDomain"`
	PlacementCluster string   `json:"placementCluster"`
	PlacementTags    []string `json:"placementTags"`
}

// ShutdownGracePeriodByPodPriority is one entry of the kubelet's
// shutdownGracePeriodByPodPriority: pods of at least Priority (and below
// the next entry's) get ShutdownGracePeriodSeconds.
type ShutdownGracePeriodByPodPriority struct {
	Priority                   int32 `json:"priority"`
	ShutdownGracePeriodSeconds int64 `json:"shutdownGracePeriodSeconds"`
}

// Limits of the shutdown settings.
const (
	maxShutdownGracePeriod   = 24 * time.Hour
	maxShutdownPriorityGroup = 64
	// criticalPriority is system-cluster-critical's, the kubelet's
	// SystemCriticalPriority.
	criticalPriority int32 = 2000000000
)

// shutdownGroups are the steps of a graceful shutdown (nil: off), as the
// kubelet derives them: the two flags make a group for every pod and one
// for critical pods.
func (c Config) shutdownGroups() []messages.ShutdownGroup {
	var out []messages.ShutdownGroup
	if len(c.ShutdownGracePeriodByPodPriority) > 0 {
		for _, g := range c.ShutdownGracePeriodByPodPriority {
			out = append(out, messages.ShutdownGroup{Priority: g.Priority, GracePeriodSeconds: g.ShutdownGracePeriodSeconds})
		}
	} else if c.ShutdownGracePeriod > 0 {
		critical := int64(c.ShutdownGracePeriodCriticalPods / time.Second)
		out = []messages.ShutdownGroup{
			{Priority: 0, GracePeriodSeconds: int64(c.ShutdownGracePeriod/time.Second) - critical},
			{Priority: criticalPriority, GracePeriodSeconds: critical},
		}
	}
	var total int64
	for _, g := range out {
		total += g.GracePeriodSeconds
	}
	if total <= 0 {
		return nil
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Priority < out[j].Priority })
	return out
}

// validateShutdown checks the graceful shutdown settings.
func (c Config) validateShutdown() []error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"shutdown-grace-period", c.ShutdownGracePeriod}, {"shutdown-grace-period-critical-pods", c.ShutdownGracePeriodCriticalPods}} {
		switch {
		case d.v < 0 || d.v > maxShutdownGracePeriod:
			errs = append(errs, fmt.Errorf("%s: must be 0 (off) to %s, got %s", d.name, maxShutdownGracePeriod, d.v))
		case d.v%time.Second != 0:
			errs = append(errs, fmt.Errorf("%s: must be whole seconds, got %s", d.name, d.v))
		}
	}
	if c.ShutdownGracePeriodCriticalPods > c.ShutdownGracePeriod {
		errs = append(errs, fmt.Errorf("shutdown-grace-period-critical-pods: %s must not exceed shutdown-grace-period %s", c.ShutdownGracePeriodCriticalPods, c.ShutdownGracePeriod))
	}
	byPrio := c.ShutdownGracePeriodByPodPriority
	if len(byPrio) == 0 {
		return errs
	}
	if c.ShutdownGracePeriod != 0 || c.ShutdownGracePeriodCriticalPods != 0 {
		errs = append(errs, errors.New("shutdownGracePeriodByPodPriority: cannot be set with shutdown-grace-period or shutdown-grace-period-critical-pods"))
	}
	if len(byPrio) > maxShutdownPriorityGroup {
		return append(errs, fmt.Errorf("shutdownGracePeriodByPodPriority: %d entries, at most %d", len(byPrio), maxShutdownPriorityGroup))
	}
	seen := map[int32]bool{}
	var total int64
	for i, g := range byPrio {
		if seen[g.Priority] {
			errs = append(errs, fmt.Errorf("shutdownGracePeriodByPodPriority[%d].priority: %d appears twice", i, g.Priority))
		}
		seen[g.Priority] = true
		if g.ShutdownGracePeriodSeconds < 0 || g.ShutdownGracePeriodSeconds > int64(maxShutdownGracePeriod/time.Second) {
			errs = append(errs, fmt.Errorf("shutdownGracePeriodByPodPriority[%d].shutdownGracePeriodSeconds: must be 0 to %d, got %d", i, int64(maxShutdownGracePeriod/time.Second), g.ShutdownGracePeriodSeconds))
			continue
		}
		total += g.ShutdownGracePeriodSeconds
	}
	if total > int64(maxShutdownGracePeriod/time.Second) {
		errs = append(errs, fmt.Errorf("shutdownGracePeriodByPodPriority: %d s in all, at most %d", total, int64(maxShutdownGracePeriod/time.Second)))
	}
	return errs
}

// Protocol is the replica and placement choice for the bus buckets.
func (n NATSConfig) Protocol() wire.ProtocolSettings {
	return wire.ProtocolSettings{Replicas: n.Replicas, Cluster: n.PlacementCluster, Tags: n.PlacementTags}
}

func DefaultConfig() Config {
	host, _ := os.Hostname()
	return Config{
		NodeName:                         strings.ToLower(host),
		RootDir:                          "/var/lib/actorlet",
		Isolation:                        "auto",
		RuntimeRequestTimeout:            2 * time.Minute,
		MaxPods:                          podrules.DefaultMaxPods,
		MaxParallelRuntimeCalls:          defaultMaxParallelRuntimeCalls,
		RuntimeCallLimit:                 RuntimeCallLimitFixed,
		ContainerLogMaxSize:              "10Mi",
		ContainerLogMaxFiles:             crilogs.DefaultMaxFiles,
		ContainerLogMonitorInterval:      crilogs.DefaultMonitorInterval,
		ImageGCHighThresholdPercent:      imagegc.DefaultPolicy().HighThresholdPercent,
		ImageGCLowThresholdPercent:       imagegc.DefaultPolicy().LowThresholdPercent,
		ImageMinimumGCAge:                imagegc.DefaultPolicy().MinAge,
		ImageGCPeriod:                    5 * time.Minute,
		EvictionHard:                     eviction.DefaultEvictionHard,
		EvictionPressureTransitionPeriod: eviction.DefaultPressureTransitionPeriod,
		EvictionMonitoringInterval:       eviction.DefaultMonitoringInterval,
		LocalStorageCapacityIsolation:    true,
		EnforceNodeAllocatable:           "pods",
		CgroupsPerQOS:                    true,
		CgroupDriver:                     "cgroupfs",
		CgroupRoot:                       "/",
		SyncFrequency:                    time.Minute,
		RelistPeriod:                     time.Second,
		NodeStatusUpdateFrequency:        10 * time.Second,
		HealthzBindAddress:               "127.0.0.1",
		HealthzPort:                      10248,
		AllowExec:                        true,
		AllowLogs:                        true,
		EnableDebuggingHandlers:          true,
		MaxInteractiveSessions:           32,
		StreamingConnectionIdleTimeout:   4 * time.Hour,
		NATS:                             NATSConfig{Host: "127.0.0.1", Port: 4222},
	}
}

// ParseFlags reads the agent's flags (and the --config file they may name).
func ParseFlags(args []string) (Config, error) {
	cfg := DefaultConfig()
	fs := flag.NewFlagSet("actorlet", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "actorlet: a node agent running pods through CRI as an actor system.\n\n"+
			"Usage:\n  actorlet [flags]                 run the agent\n  actorlet runtime [flags]         run only the embedded process runtime (a CRI server)\n\nFlags:\n")
		fs.PrintDefaults()
	}
	configFile := fs.String("config", "", "YAML file with any of the settings below (flags given on the command line win)")
	fs.StringVar(&cfg.NodeName, "node-name", cfg.NodeName, "name of this node")
	labels := fs.String("node-labels", "", "labels of this node, k=v,k2=v2 (fleet pods select nodes by them)")
	taints := fs.String("register-with-taints", "", "taints of this node, key=value:Effect,key2:Effect (NoSchedule, PreferNoSchedule, NoExecute): fleet pods must tolerate them")
	fs.StringVar(&cfg.NodeIP, "node-ip", cfg.NodeIP, "IP address reported for the node and for host-network pods (default: first non-loopback address)")
	fs.StringVar(&cfg.RootDir, "root-dir", cfg.RootDir, "directory for the agent's state: pods, logs, embedded runtime and NATS store")
	fs.StringVar(&cfg.PodManifestPath, "pod-manifest-path", cfg.PodManifestPath, "directory of static pod manifests (YAML/JSON); empty disables static pods")
	fs.StringVar(&cfg.ContainerRuntimeEndpoint, "container-runtime-endpoint", cfg.ContainerRuntimeEndpoint, "CRI endpoint, e.g. unix:///run/containerd/containerd.sock; empty runs the embedded process runtime")
	fs.StringVar(&cfg.Isolation, "isolation", cfg.Isolation, "isolation of the embedded process runtime's containers: auto (everything root can have: per-pod namespaces, per-container cgroups and filesystem views), none, or a list of namespaces, cgroups, filesystem")
	fs.BoolVar(&cfg.HostFilesystem, "host-filesystem", cfg.HostFilesystem, "embedded process runtime without filesystem views (not root, or --isolation without filesystem): run containers on the host's filesystem with their volumes left at their host paths, instead of refusing pods whose volumes need a mountPath")
	fs.DurationVar(&cfg.RuntimeRequestTimeout, "runtime-request-timeout", cfg.RuntimeRequestTimeout, "timeout of ordinary CRI calls (sandbox calls and pulls get twice this)")
	fs.IntVar(&cfg.MaxPods, "max-pods", cfg.MaxPods, "number of pods this node admits")
	fs.IntVar(&cfg.MaxParallelRuntimeCalls, "max-parallel-runtime-calls", cfg.MaxParallelRuntimeCalls, "sandbox and container creations, starts and removals in flight in the runtime at once; pods with a sandbox go first (0: unbounded); the cap of an adaptive limit")
	fs.StringVar(&cfg.RuntimeCallLimit, "runtime-call-limit", cfg.RuntimeCallLimit, "how --max-parallel-runtime-calls is kept: fixed (the flag's value) or adaptive (the limit follows the runtime's latency, up to the flag's value)")
	fs.StringVar(&cfg.PodLogsDir, "pod-logs-dir", cfg.PodLogsDir, "root of container logs (default <root-dir>/pod-logs)")
	fs.StringVar(&cfg.ContainerLogMaxSize, "container-log-max-size", cfg.ContainerLogMaxSize, "size (a quantity, e.g. 10Mi) a container log file reaches before it is rotated")
	fs.IntVar(&cfg.ContainerLogMaxFiles, "container-log-max-files", cfg.ContainerLogMaxFiles, "most log files kept per container, the current one included (at least 2)")
	fs.DurationVar(&cfg.ContainerLogMonitorInterval, "container-log-monitor-interval", cfg.ContainerLogMonitorInterval, "how often container log sizes are checked for rotation")
	fs.IntVar(&cfg.ImageGCHighThresholdPercent, "image-gc-high-threshold", cfg.ImageGCHighThresholdPercent, "percent of the image filesystem's disk usage that starts image garbage collection (100 turns it off)")
	fs.IntVar(&cfg.ImageGCLowThresholdPercent, "image-gc-low-threshold", cfg.ImageGCLowThresholdPercent, "percent of the image filesystem's disk usage image garbage collection frees down to (below the high threshold)")
	fs.DurationVar(&cfg.ImageMinimumGCAge, "image-minimum-gc-age", cfg.ImageMinimumGCAge, "least age of an unused image before it is garbage collected")
	fs.DurationVar(&cfg.ImageMaximumGCAge, "image-maximum-gc-age", cfg.ImageMaximumGCAge, "an image unused for this long is garbage collected whatever the disk usage (0: off)")
	fs.DurationVar(&cfg.ImageGCPeriod, "image-gc-period", cfg.ImageGCPeriod, "how often image garbage collection runs")
	fs.StringVar(&cfg.PodInfraContainerImage, "pod-infra-container-image", cfg.PodInfraContainerImage, "the runtime's sandbox (pause) image, never garbage collected (default: the one the runtime's configuration names, e.g. containerd's sandbox_image)")
	fs.StringVar(&cfg.SystemReserved, "system-reserved", cfg.SystemReserved, "resources held back for the system, cpu=100m,memory=256Mi,ephemeral-storage=1Gi,pid=1000: subtracted from the node's Allocatable")
	fs.StringVar(&cfg.KubeReserved, "kube-reserved", cfg.KubeReserved, "resources held back for the agent and the bus, in --system-reserved's form: subtracted from the node's Allocatable")
	fs.StringVar(&cfg.EnforceNodeAllocatable, "enforce-node-allocatable", cfg.EnforceNodeAllocatable, "comma-separated: pods (limit the kubepods cgroup to capacity minus --system-reserved and --kube-reserved), system-reserved and kube-reserved (limit --system-reserved-cgroup / --kube-reserved-cgroup to the reservation); none: nothing (needs --cgroups-per-qos)")
	fs.StringVar(&cfg.SystemReservedCgroup, "system-reserved-cgroup", cfg.SystemReservedCgroup, "existing cgroup of the system's daemons, limited to --system-reserved when --enforce-node-allocatable has system-reserved (e.g. /system.slice)")
	fs.StringVar(&cfg.KubeReservedCgroup, "kube-reserved-cgroup", cfg.KubeReservedCgroup, "existing cgroup of the agent and the bus, limited to --kube-reserved when --enforce-node-allocatable has kube-reserved")
	fs.BoolVar(&cfg.CgroupsPerQOS, "cgroups-per-qos", cfg.CgroupsPerQOS, "run pods in the kubelet's QoS cgroup hierarchy (kubepods, burstable, besteffort, one cgroup per pod with its limits); turned off with a message where the agent is not root or the cgroup hierarchy is not writable")
	fs.StringVar(&cfg.CgroupDriver, "cgroup-driver", cfg.CgroupDriver, "cgroupfs or systemd (the systemd driver needs systemd as PID 1): how pod cgroups are named and created; must match the container runtime's")
	fs.StringVar(&cfg.CgroupRoot, "cgroup-root", cfg.CgroupRoot, "cgroup the QoS hierarchy is made under (/kubepods with the default /)")
	fs.DurationVar(&cfg.SyncFrequency, "sync-frequency", cfg.SyncFrequency, "resync interval of a healthy pod")
	fs.DurationVar(&cfg.RelistPeriod, "relist-period", cfg.RelistPeriod, "PLEG relist interval (sub-second allowed)")
	fs.DurationVar(&cfg.NodeStatusUpdateFrequency, "node-status-update-frequency", cfg.NodeStatusUpdateFrequency, "node heartbeat period")
	fs.StringVar(&cfg.HealthzBindAddress, "healthz-bind-address", cfg.HealthzBindAddress, "address of the /healthz and /metrics server")
	fs.IntVar(&cfg.HealthzPort, "healthz-port", cfg.HealthzPort, "port of the /healthz and /metrics server (0 disables it)")
	fs.IntVar(&cfg.MaxInteractiveSessions, "max-interactive-sessions", cfg.MaxInteractiveSessions, "interactive sessions (exec -it, attach, port-forward connections) open at once on this node")
	fs.DurationVar(&cfg.StreamingConnectionIdleTimeout, "streaming-connection-idle-timeout", cfg.StreamingConnectionIdleTimeout, "an interactive session without input or output for this long is closed")
	fs.StringVar(&cfg.NATS.URL, "nats-url", cfg.NATS.URL, "NATS server(s) to join, comma-separated; empty runs an embedded server")
	fs.StringVar(&cfg.NATS.User, "nats-user", cfg.NATS.User, "NATS user")
	fs.StringVar(&cfg.NATS.Password, "nats-password", cfg.NATS.Password, "NATS password (visible in ps: prefer --nats-password-file or ACTORLET_NATS_PASSWORD)")
	fs.StringVar(&cfg.NATS.Token, "nats-token", cfg.NATS.Token, "NATS token (visible in ps: prefer --nats-token-file or ACTORLET_NATS_TOKEN)")
	fs.StringVar(&cfg.NATS.CredsFile, "nats-creds", cfg.NATS.CredsFile, "NATS .creds file (user JWT and NKey seed)")
	fs.StringVar(&cfg.NATS.TLSCA, "nats-tls-ca", cfg.NATS.TLSCA, "CA bundle to verify the NATS server")
	fs.StringVar(&cfg.NATS.TLSCert, "nats-tls-cert", cfg.NATS.TLSCert, "with --nats-url: client certificate for NATS mutual TLS; without: the embedded server's TLS certificate")
	fs.StringVar(&cfg.NATS.TLSKey, "nats-tls-key", cfg.NATS.TLSKey, "with --nats-url: client key for NATS mutual TLS; without: the embedded server's TLS key")
	fs.StringVar(&cfg.NATS.Host, "nats-host", cfg.NATS.Host, "address the embedded NATS server listens on")
	fs.IntVar(&cfg.NATS.Port, "nats-port", cfg.NATS.Port, "client port of the embedded NATS server (-1: random)")
	fs.DurationVar(&cfg.ShutdownGracePeriod, "shutdown-grace-period", cfg.ShutdownGracePeriod, "on a system shutdown (systemd-logind's PrepareForShutdown), terminate the pods within this time, lowest priority first, holding the shutdown back with a logind delay inhibitor lock (whole seconds; 0: off, pods get no grace period)")
	fs.DurationVar(&cfg.ShutdownGracePeriodCriticalPods, "shutdown-grace-period-critical-pods", cfg.ShutdownGracePeriodCriticalPods, "the part of --shutdown-grace-period kept for critical pods (priority >= 2000000000), terminated after the others")
	registerEvictionFlags(fs, &cfg)
	registerSecurityFlags(fs, &cfg)
	fs.StringVar(&cfg.NATS.LeafURL, "nats-leaf-url", cfg.NATS.LeafURL, "run the embedded NATS server as a leaf node of the fleet's cluster at these URLs (nats-leaf://hub:7422,...): an edge node that keeps working while the uplink is down")
	fs.StringVar(&cfg.NATS.LeafCreds, "nats-leaf-creds", cfg.NATS.LeafCreds, ".creds file of the leaf node's uplink")
	fs.StringVar(&cfg.NATS.HubDomain, "nats-hub-domain", cfg.NATS.HubDomain, "JetStream domain of the fleet's cluster, for --nats-leaf-url (default hub)")
	fs.IntVar(&cfg.NATS.Replicas, "nats-replicas", cfg.NATS.Replicas, "replicas of the bus buckets and stream when this agent creates them (1..5; existing ones are left as they are)")
	fs.StringVar(&cfg.NATS.PlacementCluster, "nats-placement-cluster", cfg.NATS.PlacementCluster, "NATS cluster to place the bus buckets and stream on when this agent creates them")
	tags := fs.String("nats-placement-tags", "", "server tags, t1,t2, the bus buckets and stream are placed by when this agent creates them")
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	fs.Var(klogFlags.Lookup("v").Value, "v", "log verbosity (klog)")
	fs.Var(klogFlags.Lookup("vmodule").Value, "vmodule", "per-file log verbosity (klog)")

	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q (see actorlet -h)", fs.Arg(0))
	}
	if *configFile != "" {
		fromFile := DefaultConfig()
		data, err := os.ReadFile(*configFile)
		if err != nil {
			return cfg, fmt.Errorf("read --config: %w", err)
		}
		if err := yaml.UnmarshalStrict(data, &fromFile); err != nil {
			return cfg, fmt.Errorf("--config %s: %w", *configFile, err)
		}
		// The flag variables point into cfg: load the file's values there,
		// then parse again so flags given on the command line win.
		cfg = fromFile
		if err := fs.Parse(args); err != nil {
			return cfg, err
		}
	}
	if *labels != "" {
		l, err := parseLabels(*labels)
		if err != nil {
			return cfg, fmt.Errorf("--node-labels: %w", err)
		}
		cfg.NodeLabels = l
	}
	if *tags != "" {
		cfg.NATS.PlacementTags = nil
		for _, t := range strings.Split(*tags, ",") {
			if t = strings.TrimSpace(t); t != "" {
				cfg.NATS.PlacementTags = append(cfg.NATS.PlacementTags, t)
			}
		}
	}
	if *taints != "" {
		t, err := ParseTaints(*taints)
		if err != nil {
			return cfg, fmt.Errorf("--register-with-taints: %w", err)
		}
		cfg.RegisterWithTaints = t
	}
	if err := cfg.resolveSecrets(os.Getenv); err != nil {
		return cfg, err
	}
	return cfg, cfg.complete()
}

// complete fills derived defaults and checks the result.
func (c *Config) complete() error {
	var errs []error
	if c.NodeName == "" {
		errs = append(errs, errors.New("node-name: required (the host name could not be read)"))
	}
	if c.RootDir == "" {
		errs = append(errs, errors.New("root-dir: required"))
	} else if abs, err := filepath.Abs(c.RootDir); err == nil {
		c.RootDir = abs
	}
	if c.PodLogsDir == "" {
		c.PodLogsDir = filepath.Join(c.RootDir, "pod-logs")
	}
	if c.MaxParallelRuntimeCalls < 0 || c.MaxParallelRuntimeCalls > maxParallelRuntimeCallsLimit {
		errs = append(errs, fmt.Errorf("max-parallel-runtime-calls: must be 0 (unbounded) to %d, got %d", maxParallelRuntimeCallsLimit, c.MaxParallelRuntimeCalls))
	}
	if c.RuntimeCallLimit == "" {
		c.RuntimeCallLimit = RuntimeCallLimitFixed
	}
	if c.RuntimeCallLimit != RuntimeCallLimitAdaptive && c.RuntimeCallLimit != RuntimeCallLimitFixed {
		errs = append(errs, fmt.Errorf("runtime-call-limit: must be %q or %q, got %.40q", RuntimeCallLimitAdaptive, RuntimeCallLimitFixed, c.RuntimeCallLimit))
	}
	if c.MaxPods <= 0 {
		errs = append(errs, fmt.Errorf("max-pods: must be positive, got %d", c.MaxPods))
	}
	if _, err := procruntime.ParseIsolation(c.Isolation); err != nil {
		errs = append(errs, fmt.Errorf("isolation: %w", err))
	}
	if q, err := resource.ParseQuantity(c.ContainerLogMaxSize); err != nil {
		errs = append(errs, fmt.Errorf("container-log-max-size: %q: %w", c.ContainerLogMaxSize, err))
	} else {
		if err := (crilogs.Policy{MaxSize: q.Value(), MaxFiles: c.ContainerLogMaxFiles}).Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.ContainerLogMonitorInterval <= 0 {
		errs = append(errs, fmt.Errorf("container-log-monitor-interval: must be positive, got %s", c.ContainerLogMonitorInterval))
	}
	if err := c.ImageGCPolicy().Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.MaxInteractiveSessions <= 0 {
		errs = append(errs, fmt.Errorf("max-interactive-sessions: must be positive, got %d", c.MaxInteractiveSessions))
	}
	if c.StreamingConnectionIdleTimeout <= 0 {
		errs = append(errs, fmt.Errorf("streaming-connection-idle-timeout: must be positive, got %s", c.StreamingConnectionIdleTimeout))
	}
	if c.ImageGCPeriod <= 0 {
		errs = append(errs, fmt.Errorf("image-gc-period: must be positive, got %s", c.ImageGCPeriod))
	}
	if c.PodInfraContainerImage != "" {
		if _, err := reference.ParseNormalizedNamed(c.PodInfraContainerImage); err != nil {
			errs = append(errs, fmt.Errorf("pod-infra-container-image: %w", err))
		}
	}
	if c.RelistPeriod <= 0 {
		errs = append(errs, fmt.Errorf("relist-period: must be positive, got %s", c.RelistPeriod))
	}
	if c.SyncFrequency <= 0 {
		errs = append(errs, fmt.Errorf("sync-frequency: must be positive, got %s", c.SyncFrequency))
	}
	if c.NodeStatusUpdateFrequency <= 0 {
		errs = append(errs, fmt.Errorf("node-status-update-frequency: must be positive, got %s", c.NodeStatusUpdateFrequency))
	}
	errs = append(errs, c.validateShutdown()...)
	errs = append(errs, c.validateEviction()...)
	if _, err := c.Reservations(); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.enforced(); err != nil {
		errs = append(errs, err)
	}
	if _, err := cm.ParseDriver(c.CgroupDriver); err != nil {
		errs = append(errs, err)
	} else if c.CgroupsPerQOS && c.CgroupDriver == string(cm.DriverSystemd) && c.ContainerRuntimeEndpoint == "" && c.Runtime == nil {
		errs = append(errs, errors.New("cgroup-driver: systemd: the embedded process runtime takes cgroupfs paths only; use --cgroup-driver=cgroupfs, or give --container-runtime-endpoint"))
	}
	if c.CgroupRoot == "" {
		c.CgroupRoot = "/"
	}
	if err := checkCgroupPath("cgroup-root", c.CgroupRoot); err != nil {
		errs = append(errs, err)
	}
	if err := c.NATS.Protocol().Validate(); err != nil {
		errs = append(errs, fmt.Errorf("nats-replicas/nats-placement-*: %w", err))
	}
	return errors.Join(errs...)
}

// enforced parses --enforce-node-allocatable ("none" or a list of pods,
// system-reserved, kube-reserved) and checks the cgroups it needs.
func (c *Config) enforced() (map[string]bool, error) {
	out := map[string]bool{}
	v := strings.TrimSpace(c.EnforceNodeAllocatable)
	if v == "" || v == "none" {
		return out, nil
	}
	if len(v) > 64 {
		return nil, fmt.Errorf("enforce-node-allocatable: %d bytes, limit is 64", len(v))
	}
	var errs []error
	for _, e := range strings.Split(v, ",") {
		switch e = strings.TrimSpace(e); e {
		case "pods", "system-reserved", "kube-reserved":
			out[e] = true
		default:
			errs = append(errs, fmt.Errorf("enforce-node-allocatable: %q: want none or a list of pods, system-reserved, kube-reserved", e))
		}
	}
	for _, r := range []struct{ key, flag, cgroup string }{
		{"system-reserved", "system-reserved-cgroup", c.SystemReservedCgroup},
		{"kube-reserved", "kube-reserved-cgroup", c.KubeReservedCgroup},
	} {
		if !out[r.key] {
			continue
		}
		if err := checkCgroupPath(r.flag, r.cgroup); err != nil {
			errs = append(errs, fmt.Errorf("enforce-node-allocatable has %s: %w", r.key, err))
		}
	}
	return out, errors.Join(errs...)
}

// checkCgroupPath checks a cgroup flag's value: an absolute path without
// "..", bounded.
func checkCgroupPath(flag, p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%s: required", flag)
	case len(p) > maxCgroupRoot:
		return fmt.Errorf("%s: %d bytes, limit is %d", flag, len(p), maxCgroupRoot)
	case !strings.HasPrefix(p, "/") || strings.Contains(p, "..") || strings.ContainsRune(p, 0):
		return fmt.Errorf("%s: %q: want an absolute cgroup path without \"..\"", flag, p)
	}
	return nil
}

// Reservations is what --system-reserved, --kube-reserved and
// --eviction-hard hold back from the node's capacity.
func (c *Config) Reservations() (allocatable.Config, error) {
	var out allocatable.Config
	var errs []error
	var err error
	if out.SystemReserved, err = allocatable.ParseReservation("system-reserved", c.SystemReserved); err != nil {
		errs = append(errs, err)
	}
	if out.KubeReserved, err = allocatable.ParseReservation("kube-reserved", c.KubeReserved); err != nil {
		errs = append(errs, err)
	}
	if out.EvictionHard, err = allocatable.ParseEvictionHard("eviction-hard", c.EvictionHard); err != nil {
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// ImageGCPolicy is the image garbage collection policy the flags give.
func (c *Config) ImageGCPolicy() imagegc.Policy {
	return imagegc.Policy{
		HighThresholdPercent: c.ImageGCHighThresholdPercent,
		LowThresholdPercent:  c.ImageGCLowThresholdPercent,
		MinAge:               c.ImageMinimumGCAge,
		MaxAge:               c.ImageMaximumGCAge,
	}
}

func parseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not key=value", kv)
		}
		out[k] = v
	}
	return out, nil
}

// ParseTaints reads the kubelet's --register-with-taints form:
// key[=value]:Effect, comma separated.
func ParseTaints(s string) ([]v1.Taint, error) {
	var out []v1.Taint
	for _, spec := range strings.Split(s, ",") {
		spec = strings.TrimSpace(spec)
		kv, effect, ok := strings.Cut(spec, ":")
		if !ok {
			return nil, fmt.Errorf("taint %q: want key[=value]:Effect", spec)
		}
		key, value, _ := strings.Cut(kv, "=")
		t := v1.Taint{Key: key, Value: value, Effect: v1.TaintEffect(effect)}
		switch t.Effect {
		case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
		default:
			return nil, fmt.Errorf("taint %q: effect %q must be NoSchedule, PreferNoSchedule or NoExecute", spec, effect)
		}
		if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
			return nil, fmt.Errorf("taint %q: key: %s", spec, strings.Join(msgs, "; "))
		}
		if msgs := validation.IsValidLabelValue(value); len(msgs) > 0 {
			return nil, fmt.Errorf("taint %q: value: %s", spec, strings.Join(msgs, "; "))
		}
		out = append(out, t)
	}
	if len(out) > 64 {
		return nil, fmt.Errorf("%d taints: at most 64", len(out))
	}
	return out, nil
}
