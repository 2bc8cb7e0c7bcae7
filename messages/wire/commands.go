package wire

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Verbs: the last token of each endpoint subject.
const (
	VerbPodsList     = "pods.list"
	VerbPodsGet      = "pods.get"
	VerbPodsDescribe = "pods.describe"
	VerbLogs         = "logs"
	VerbExec         = "exec"
	VerbRestart      = "restart"
	VerbEvict        = "evict"
)

// Verbs lists every verb the service serves, in registration order.
var Verbs = []string{VerbPodsList, VerbPodsGet, VerbPodsDescribe, VerbLogs, VerbExec, VerbRestart, VerbEvict, VerbPlacement,
	VerbStreamExec, VerbStreamAttach, VerbStreamPortForward}

// PodVerbs are the verbs about one namespace's pods: served on
// NamespacedCommandSubject as well. The others (VerbPlacement) are about
// the node.
var PodVerbs = []string{VerbPodsList, VerbPodsGet, VerbPodsDescribe, VerbLogs, VerbExec, VerbRestart, VerbEvict,
	VerbStreamExec, VerbStreamAttach, VerbStreamPortForward}

// PodRef names one pod. An empty namespace means "default".
type PodRef struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// ListPodsRequest asks for the node's pods; an empty namespace means all.
// Replies are pages, as the API server's list chunks: at most Limit pods
// (0: DefaultListLimit), fewer when more would not fit in one bus message;
// Continue, taken from the previous page, asks for the next one.
type ListPodsRequest struct {
	Namespace string `json:"namespace,omitempty"`
	Limit     int    `json:"limit,omitempty"`
	Continue  string `json:"continue,omitempty"`
}

// ListPodsResponse carries pods with their live status, sorted by
// namespace and name. Continue is set when more pods follow.
type ListPodsResponse struct {
	Pods     []*v1.Pod `json:"pods"`
	Continue string    `json:"continue,omitempty"`
}

// GetPodRequest asks for one pod.
type GetPodRequest = PodRef

// GetPodResponse carries the pod with its live status.
type GetPodResponse struct {
	Pod *v1.Pod `json:"pod"`
}

// DescribePodRequest asks for a pod's full description.
type DescribePodRequest = PodRef

// Description is everything the node knows about one pod: its status, the
// pod actor's state, its probes, its containers' restart back-offs and
// recent events.
type Description struct {
	Pod      *v1.Pod              `json:"pod"`
	Worker   PodWorker            `json:"worker"`
	Probes   []ProbeWorker        `json:"probes,omitempty"`
	BackOffs map[string]time.Time `json:"backOffs,omitempty"` // container → back-off until
	Events   []v1.Event           `json:"events,omitempty"`
}

// PodWorker is the pod actor's state in a Description.
type PodWorker struct {
	Found    bool      `json:"found"`
	UID      types.UID `json:"uid,omitempty"`
	FullName string    `json:"fullName,omitempty"`
	// WorkType is sync, terminating or terminated.
	WorkType         string    `json:"workType"`
	Working          bool      `json:"working"`                 // a sync or kill is in flight
	PendingUpdate    string    `json:"pendingUpdate,omitempty"` // the coalesced update waiting, if any
	RestartRequested bool      `json:"restartRequested,omitempty"`
	GracePeriod      *int64    `json:"gracePeriod,omitempty"` // effective grace period once terminating
	LastSyncTime     time.Time `json:"lastSyncTime"`
	LastSyncError    string    `json:"lastSyncError,omitempty"`
	NextSyncTime     time.Time `json:"nextSyncTime"`
	ActorRestarts    int       `json:"actorRestarts"` // times the actor was restarted by supervision
}

// ProbeWorker is one probe worker's view in a Description.
type ProbeWorker struct {
	ContainerName string `json:"containerName"`
	ContainerID   string `json:"containerID,omitempty"`
	// Kind is liveness, readiness or startup; Result Success, Failure or
	// Unknown.
	Kind      string    `json:"kind"`
	Result    string    `json:"result"`
	Successes int       `json:"successes"` // consecutive
	Failures  int       `json:"failures"`  // consecutive
	LastProbe time.Time `json:"lastProbe"`
	Message   string    `json:"message,omitempty"`
}

// LogsRequest asks for a container's log.
type LogsRequest struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Container may be empty when the pod has exactly one container.
	Container string `json:"container,omitempty"`
	// TailLines keeps only the last N lines; nil means all.
	TailLines  *int64 `json:"tailLines,omitempty"`
	Timestamps bool   `json:"timestamps,omitempty"`
	Previous   bool   `json:"previous,omitempty"`
	Follow     bool   `json:"follow,omitempty"`
	// Inbox, when set, receives the log as LogChunk requests the client
	// must acknowledge (any reply); required for Follow. The final
	// LogsResponse then carries no data.
	Inbox string `json:"inbox,omitempty"`
}

// Why a log follow ended (LogsResponse.Ended).
const (
	EndedExited     = "exited"
	EndedRestarted  = "restarted"
	EndedGone       = "pod gone"
	EndedClientGone = "client gone"
	EndedCanceled   = "canceled"
)

// DefaultExecTimeout bounds an exec whose request sets no TimeoutSeconds.
const DefaultExecTimeout = 60 * time.Second

// MaxInlineLogBytes bounds a log sent in the reply itself (no inbox).
const MaxInlineLogBytes = 512 * 1024

// LogChunk is one piece of a streamed log, sent to LogsRequest.Inbox.
type LogChunk struct {
	Data []byte `json:"data"`
}

// LogsResponse ends a logs request. Without an inbox it carries the log.
type LogsResponse struct {
	Data []byte `json:"data,omitempty"`
	// Truncated is set when an inline log was cut to MaxInlineLogBytes
	// (its oldest part dropped).
	Truncated bool `json:"truncated,omitempty"`
	// Ended says why a follow stopped: "exited", "restarted", "client gone"
	// or "canceled".
	Ended string `json:"ended,omitempty"`
}

// ExecRequest runs a command in a container.
type ExecRequest struct {
	Namespace string   `json:"namespace,omitempty"`
	Name      string   `json:"name"`
	Container string   `json:"container,omitempty"`
	Command   []string `json:"command"`
	// TimeoutSeconds bounds the command; 0 means the service default.
	TimeoutSeconds int64 `json:"timeoutSeconds,omitempty"`
}

// ExecResponse is a command's output and exit code (a non-zero exit is not
// an error of the request).
type ExecResponse struct {
	Stdout   []byte `json:"stdout,omitempty"`
	Stderr   []byte `json:"stderr,omitempty"`
	ExitCode int    `json:"exitCode"`
	// Truncated is set when the output was cut to fit in one bus message
	// (or by the runtime's own cap): the start of each stream is kept.
	Truncated bool `json:"truncated,omitempty"`
}

// RestartRequest restarts a pod's containers, or one when Container is set.
type RestartRequest struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Container string `json:"container,omitempty"`
}

// EvictRequest evicts a pod: it is killed and ends Failed with the reason.
type EvictRequest struct {
	Namespace          string `json:"namespace,omitempty"`
	Name               string `json:"name"`
	GracePeriodSeconds *int64 `json:"gracePeriodSeconds,omitempty"`
	Reason             string `json:"reason,omitempty"`
}

// Ack answers restart and evict.
type Ack struct {
	Message string `json:"message"`
}
