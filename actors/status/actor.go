package status

import (
	"errors"
	"maps"

	"github.com/actorlet/actorlet/messages"
	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Config is what the status actor needs.
type Config struct {
	// Sink receives every published change; it must not block.
	Sink Sink
	// Clock stamps condition transitions and start times; nil means real
	// time.
	Clock clock.PassiveClock
}

// Validate reports what is wrong with cfg, naming the field.
func (c Config) Validate() error {
	if c.Sink == nil {
		return errors.New("status config: Sink is required")
	}
	return nil
}

// Props returns the props of the status actor, or the error naming what
// is wrong with cfg.
func Props(cfg Config) (*actor.Props, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return actor.PropsFromProducer(func() actor.Actor {
		return &statusActor{cfg: cfg, pods: make(map[types.UID]*podState)}
	}), nil
}

// podState is what the actor keeps per pod.
type podState struct {
	pod      *v1.Pod       // latest spec seen
	computed *v1.PodStatus // latest runtime view; nil until one arrives
	// sandboxReady is the runtime fact of the latest runtime view behind
	// PodReadyToStartContainers.
	sandboxReady bool
	rejected     *v1.PodStatus // set when admission refused the pod
	probes       probeResults  // latest probe results, by container and kind
	published    *v1.PodStatus // last status sent to the sink
	// publishedDeleting is whether the pod sent carried a deletion
	// timestamp: a deletion is published even when the status is unchanged.
	publishedDeleting bool
	// publishedLabels and publishedAnnotations are the metadata of the pod
	// sent: a labels-only update changes no status but must reach the
	// status entry, which carries the pod.
	publishedLabels, publishedAnnotations map[string]string
}

// statusActor owns every pod's published status.
type statusActor struct {
	cfg  Config
	pods map[types.UID]*podState
}

var _ actor.Actor = &statusActor{}

// Receive handles one message; it never blocks (the sink queues).
func (a *statusActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *messages.PodStatusComputed:
		a.computed(msg)
	case *messages.PodRejected:
		a.rejected(msg)
	case *messages.ProbeResultChanged:
		a.probeChanged(msg)
	case *messages.PodForgotten:
		a.forget(msg.UID)
	case *messages.ListPodStatuses:
		ctx.Respond(a.list())
	}
}

func (a *statusActor) state(uid types.UID) *podState {
	st, ok := a.pods[uid]
	if !ok {
		st = &podState{probes: probeResults{}}
		a.pods[uid] = st
	}
	return st
}

func (a *statusActor) computed(msg *messages.PodStatusComputed) {
	if msg.Pod == nil {
		klog.ErrorS(errors.New("pod is nil"), "Ignoring computed pod status")
		return
	}
	st := a.state(msg.Pod.UID)
	st.pod = msg.Pod
	s := msg.Status
	st.computed, st.sandboxReady = &s, msg.SandboxReady
	a.publish(st)
}

func (a *statusActor) rejected(msg *messages.PodRejected) {
	if msg.Pod == nil {
		klog.ErrorS(errors.New("pod is nil"), "Ignoring rejected pod status", "reason", msg.Reason)
		return
	}
	st := a.state(msg.Pod.UID)
	st.pod = msg.Pod
	s := rejectedStatus(msg.Reason, msg.Message, st.published, a.now())
	s.QOSClass = podQOS(msg.Pod)
	st.rejected = &s
	a.publish(st)
}

func (a *statusActor) probeChanged(msg *messages.ProbeResultChanged) {
	switch msg.Kind {
	case messages.Readiness, messages.Startup:
	default:
		return // liveness restarts containers; it does not change the status
	}
	st := a.state(msg.PodUID)
	st.probes[probeKey{msg.ContainerName, msg.Kind}] = probeResult{containerID: msg.ContainerID, result: msg.Result}
	a.publish(st)
}

func (a *statusActor) forget(uid types.UID) {
	st, ok := a.pods[uid]
	if !ok {
		return
	}
	delete(a.pods, uid)
	if st.pod != nil {
		a.cfg.Sink.PodStatusRemoved(st.pod.DeepCopy())
	}
}

// publish builds the pod's status and sends it when it changed.
func (a *statusActor) publish(st *podState) {
	if st.pod == nil {
		return // probe results before any status: kept for later
	}
	var next v1.PodStatus
	switch {
	case st.rejected != nil:
		next = *st.rejected
	case st.computed != nil:
		next = buildStatus(st.pod, *st.computed, st.sandboxReady, st.probes, st.published, a.now())
	default:
		return
	}
	deleting := st.pod.DeletionTimestamp != nil
	if st.published != nil && apiequality.Semantic.DeepEqual(*st.published, next) && deleting == st.publishedDeleting &&
		maps.Equal(st.pod.Labels, st.publishedLabels) && maps.Equal(st.pod.Annotations, st.publishedAnnotations) {
		return
	}
	st.published, st.publishedDeleting = &next, deleting
	st.publishedLabels, st.publishedAnnotations = maps.Clone(st.pod.Labels), maps.Clone(st.pod.Annotations)
	klog.V(4).InfoS("Pod status changed", "pod", klog.KObj(st.pod), "podUID", st.pod.UID, "phase", next.Phase)
	a.cfg.Sink.PodStatusChanged(a.change(st))
}

// change is the published message for a pod: a copy the sink may keep.
func (a *statusActor) change(st *podState) messages.PodStatusChanged {
	pod := st.pod.DeepCopy()
	pod.Status = *st.published.DeepCopy()
	return messages.PodStatusChanged{
		Pod:    pod,
		Static: pod.Annotations[messages.ConfigSourceAnnotation] == messages.SourceFile,
	}
}

func (a *statusActor) list() *messages.PodStatusList {
	out := &messages.PodStatusList{Pods: []messages.PodStatusChanged{}}
	for _, st := range a.pods {
		if st.pod != nil && st.published != nil {
			out.Pods = append(out.Pods, a.change(st))
		}
	}
	sortedByName(out.Pods)
	return out
}

func (a *statusActor) now() metav1.Time { return metav1.NewTime(a.cfg.Clock.Now()) }
