package messages

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// RelistHealthChanged is sent by PLEG to the supervisor when its health
// flips: unhealthy once no relist succeeded for the threshold (3 min).
type RelistHealthChanged struct {
	Healthy    bool
	LastRelist time.Time
	Message    string
}

// RuntimeHealthChanged reports whether the CRI runtime answers Status with
// RuntimeReady and NetworkReady.
type RuntimeHealthChanged struct {
	Ready   bool
	Message string
}

// NodeLabelsChanged carries the node's labels after an operator changed
// them at run time (actorletctl label node), well-known ones included:
// admission checks new pods' nodeSelector against them.
type NodeLabelsChanged struct {
	Labels map[string]string
}

// ListPodStatuses asks the status actor for every pod it knows; the reply is
// PodStatusList.
type ListPodStatuses struct{}

// PodStatusList answers ListPodStatuses: pods with their latest status.
type PodStatusList struct {
	Pods []PodStatusChanged
}

// DescribePodWorker asks the supervisor (which forwards to the pod actor)
// for the worker's state; the reply is PodWorkerDescription. Found is false
// when no worker exists for the UID.
type DescribePodWorker struct {
	UID types.UID
}

// PodWorkerDescription is a pod actor's state, for operators (the node
// maps it onto wire.PodWorker for pods.describe).
type PodWorkerDescription struct {
	Found            bool
	UID              types.UID
	FullName         string
	WorkType         PodWorkType
	Working          bool   // a sync or kill is in flight
	PendingUpdate    string // the coalesced update waiting, if any
	RestartRequested bool
	GracePeriod      *int64 // effective grace period once terminating
	LastSyncTime     time.Time
	LastSyncError    string
	NextSyncTime     time.Time
	ActorRestarts    int // times this actor was restarted by supervision
}

// ListProbes asks the prober manager for the probe workers of one pod; the
// reply is ProbeStates.
type ListProbes struct {
	UID types.UID
}

// ProbeState is one probe worker's current view (the node maps it onto
// wire.ProbeWorker for pods.describe).
type ProbeState struct {
	ContainerName string
	ContainerID   string
	Kind          ProbeKind
	Result        ProbeResult
	Successes     int // consecutive
	Failures      int // consecutive
	LastProbe     time.Time
	Message       string
}

// ProbeStates answers ListProbes.
type ProbeStates struct {
	Probes []ProbeState
}

// NodeConditions is the supervisor's answer to GetNodeConditions: what the
// node heartbeat reports.
type NodeConditions struct {
	RuntimeReady   bool
	RuntimeMessage string
	PLEGHealthy    bool
	PLEGMessage    string
	RunningPods    int
	Pods           []*v1.Pod // desired pods it knows, for capacity accounting
	// ShuttingDown is set while a graceful node shutdown is in progress:
	// the node reports Ready false ("node is shutting down").
	ShuttingDown bool
	// Pressure are the node's pressure conditions (MemoryPressure,
	// DiskPressure, PIDPressure) the eviction manager reports.
	Pressure []v1.NodeConditionType
	// Terminated are the desired pods whose work is over (completed,
	// evicted) and that will not run again: what the runtime keeps of them
	// (dead containers, sandboxes, emptyDirs, logs) is what the eviction
	// manager reclaims under disk pressure.
	Terminated []types.UID
}

// GetNodeConditions asks the supervisor for NodeConditions.
type GetNodeConditions struct{}
