package kuberuntime

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/cri/volume"
	"github.com/actorlet/actorlet/messages/record"
)

// Kubelet constants this manager reproduces.
const (
	// orphanGracePeriod is used to kill a pod no source knows.
	orphanGracePeriod int64 = 1
	// minimumGracePeriod is the least StopContainer gets after a preStop hook.
	minimumGracePeriod int64 = 2

	restartBackOffInitial = 10 * time.Second
	restartBackOffMax     = 300 * time.Second
	imageBackOffInitial   = 10 * time.Second
	imageBackOffMax       = 300 * time.Second

	// reasonCacheTTL is how long a failure reason stays without being renewed.
	reasonCacheTTL = 10 * time.Minute
)

// Options configure a Manager.
type Options struct {
	// PodLogsDir is the root of pod logs:
	// <PodLogsDir>/<ns>_<name>_<uid>/<container>/<restartCount>.log.
	PodLogsDir string
	// PodsDir is the root of per-pod directories; emptyDir volumes live in
	// <PodsDir>/<uid>/volumes/emptydir/<name>.
	PodsDir        string
	RuntimeHandler string
	// NodeName, when set, labels every sandbox and container this manager
	// creates (LabelNode) and limits GetPods to them, so agents sharing a
	// runtime never adopt or kill each other's pods.
	NodeName string
	// HostIP is reported as the pod IP of host-network pods.
	HostIP string
	// Clock drives back-off and hook timing (default: the real clock).
	Clock clock.Clock
	// HTTPClient runs httpGet lifecycle hooks (default: short timeouts).
	HTTPClient *http.Client
	// KeepDeadContainers is how many dead instances per container name are
	// kept besides the newest (default 1).
	KeepDeadContainers int
	// Recorder receives events; nil drops them.
	Recorder record.EventRecorder
	// Allocatable is the node's: the downward API reads it for a limit a
	// container does not set.
	Allocatable v1.ResourceList
	// Objects gives the ConfigMaps and Secrets that env and volumes
	// reference; nil: pods that use them fail to start with a clear error.
	Objects volume.Objects
	// DenyEphemeralContainers refuses debug (ephemeral) containers, as the
	// node refuses exec (actorlet --allow-exec=false): an ephemeral
	// container runs a command of the operator's choice in the pod, as exec
	// does. The container waits with reason Forbidden and a 403-style
	// message; a Warning event says so once.
	DenyEphemeralContainers bool
	// ImageUsed, optional, is told the image reference each container is
	// created from (image GC's record of last use). It must not block.
	ImageUsed func(imageRef string)
	// PodCgroups, when set (--cgroups-per-qos), makes each pod's cgroup
	// before its sandbox, gives it to the runtime as the sandbox's cgroup
	// parent, and removes it after the pod's cleanup; GC sweeps orphaned
	// ones. Nil: the runtime picks the cgroup parent.
	PodCgroups PodCgroups
}

// PodCgroups is what the manager needs of the node's cgroup manager
// (cri/cm.Manager): calls do cgroup I/O and run in pod work, never in an
// actor's Receive.
type PodCgroups interface {
	// EnsurePod creates or updates the pod's cgroup and returns the cgroup
	// parent for its sandbox.
	EnsurePod(pod *v1.Pod) (string, error)
	// RemovePod removes the pod's cgroup.
	RemovePod(uid types.UID) error
	// RemoveOrphans removes pod cgroups of pods it did not make since start
	// and keep does not keep.
	RemoveOrphans(keep func(types.UID) bool) error
}

// Manager drives one runtime for all pods of the node. It is safe for
// concurrent use by many pod actors.
type Manager struct {
	rt   cri.Runtime
	opts Options

	restartBackOff *backOff
	imageBackOff   *backOff
	images         *imageStatuses // ImageStatus answers shared by a start wave
	reasons        *reasonCache
	messages       messageCache // termination messages of exited containers
	secrets        secretValues // Secret values containers were started with (redact.go)

	mu          sync.Mutex
	runtimeName string
	versionMu   sync.Mutex // one Version call at a time: the first syncs share it

	// podDirs: pods synced since the agent started (their directories
	// are theirs); removingDirs: those a sweep of orphaned pod
	// directories is removing, which a sync of that pod waits for
	// (orphan_dirs.go).
	podDirsMu    sync.Mutex
	podDirsDone  *sync.Cond // on podDirsMu: a removal ended
	podDirs      map[types.UID]bool
	removingDirs map[types.UID]bool
}

// NewManager returns a manager driving rt.
func NewManager(rt cri.Runtime, opts Options) *Manager {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{
			Timeout: 10 * time.Second,
			// Hooks target the pod itself: never follow redirects elsewhere.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	if opts.KeepDeadContainers <= 0 {
		opts.KeepDeadContainers = 1
	}
	m := &Manager{
		podDirs:        map[types.UID]bool{},
		removingDirs:   map[types.UID]bool{},
		rt:             rt,
		opts:           opts,
		restartBackOff: newBackOff(opts.Clock, restartBackOffInitial, restartBackOffMax),
		imageBackOff:   newBackOff(opts.Clock, imageBackOffInitial, imageBackOffMax),
		images:         newImageStatuses(opts.Clock),
		reasons:        newReasonCache(opts.Clock),
	}
	m.podDirsDone = sync.NewCond(&m.podDirsMu)
	return m
}

// BackOffs returns, for describe, the end of each container's current
// restart back-off (container name → time the back-off ends).
func (m *Manager) BackOffs(uid types.UID) map[string]time.Time {
	return m.restartBackOff.endsForPod(uid)
}

// GC drops back-off and reason-cache entries that went stale. Housekeeping
// calls it periodically.
func (m *Manager) GC() {
	m.restartBackOff.gc()
	m.imageBackOff.gc()
	m.reasons.gc(reasonCacheTTL)
	m.removeOrphanedCgroups()
}

// orphanCgroupListTimeout bounds the sandbox listing of the orphaned pod
// cgroup sweep.
const orphanCgroupListTimeout = 30 * time.Second

// removeOrphanedCgroups removes the pod cgroups of pods the runtime has
// no sandbox of and the agent did not make since it started (left by an
// agent that stopped between a pod's cleanup and its cgroup's removal).
func (m *Manager) removeOrphanedCgroups() {
	if m.opts.PodCgroups == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), orphanCgroupListTimeout)
	defer cancel()
	sandboxes, err := m.rt.ListPodSandbox(ctx, nil)
	if err != nil {
		klog.ErrorS(err, "Orphaned pod cgroups not swept: cannot list sandboxes")
		return
	}
	keep := map[types.UID]bool{}
	for _, s := range sandboxes {
		keep[types.UID(s.GetMetadata().GetUid())] = true
	}
	if err := m.opts.PodCgroups.RemoveOrphans(func(uid types.UID) bool { return keep[uid] }); err != nil {
		klog.ErrorS(err, "Failed to remove orphaned pod cgroups")
	}
}

// forgetPod drops all in-memory state of a pod.
func (m *Manager) forgetPod(uid types.UID) {
	m.restartBackOff.forgetPod(uid)
	m.imageBackOff.forgetPod(uid)
	m.reasons.forgetPod(uid)
	m.secrets.forget(uid)
}

// event emits a pod event if a recorder is configured.
func (m *Manager) event(pod *v1.Pod, eventType, reason, format string, args ...any) {
	if m.opts.Recorder == nil || pod == nil {
		return
	}
	// Runtime errors and hook output quote commands and what they print:
	// a Secret expanded into them never reaches an event.
	m.opts.Recorder.Eventf(pod, eventType, reason, "%s", m.Redact(pod, fmt.Sprintf(format, args...)))
}

// runtimeNameFor returns the runtime's name for container IDs
// ("<runtime>://<id>"), asking the runtime once.
func (m *Manager) runtimeNameFor(ctx context.Context) string {
	m.mu.Lock()
	name := m.runtimeName
	m.mu.Unlock()
	if name != "" {
		return name
	}
	// Many pod actors sync at once after a start: one asks, the others
	// wait for its answer instead of each sending a Version call.
	m.versionMu.Lock()
	defer m.versionMu.Unlock()
	m.mu.Lock()
	name = m.runtimeName
	m.mu.Unlock()
	if name != "" {
		return name
	}
	v, err := m.rt.Version(ctx, "v1")
	if err != nil || v.GetRuntimeName() == "" {
		klog.V(4).InfoS("Runtime version unknown, container IDs use the generic prefix", "err", err)
		return "cri"
	}
	m.mu.Lock()
	m.runtimeName = v.GetRuntimeName()
	m.mu.Unlock()
	return v.GetRuntimeName()
}

func (m *Manager) cachedRuntimeName() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.runtimeName == "" {
		return "cri"
	}
	return m.runtimeName
}
