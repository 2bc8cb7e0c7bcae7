package prober

import (
	"sort"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/podrules"
	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// manager owns the probe workers. It learns containers from
// PodStatusComputed, gates liveness and readiness on the startup probe, and
// forwards result changes to its parent.
type manager struct {
	cfg     Config
	workers map[workerKey]*actor.PID
	states  map[workerKey]messages.ProbeState
	pods    map[types.UID]*podView
}

// podView is what the manager last saw of a pod.
type podView struct {
	pod        *v1.Pod
	podIP      string
	containers map[string]containerView
	// startedID is, per container name, the container ID whose startup
	// probe succeeded.
	startedID map[string]string
}

// containerView is one container's runtime state from the pod status.
type containerView struct {
	id        string
	running   bool
	startedAt metav1.Time
}

func newManager(cfg Config) *manager {
	return &manager{
		cfg:     cfg,
		workers: map[workerKey]*actor.PID{},
		states:  map[workerKey]messages.ProbeState{},
		pods:    map[types.UID]*podView{},
	}
}

var _ actor.Actor = &manager{}

// Receive handles one message.
func (m *manager) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *messages.PodStatusComputed:
		m.podStatus(ctx, msg)
	case *messages.PodForgotten:
		m.forget(ctx, msg.UID)
	case *messages.ListProbes:
		ctx.Respond(m.list(msg.UID))
	case *workerReport:
		m.workerReport(ctx, msg)
	}
}

// podStatus starts the workers the pod's containers need, stops those no
// longer declared, and tells each worker its container's state.
func (m *manager) podStatus(ctx actor.Context, msg *messages.PodStatusComputed) {
	pod := msg.Pod
	if pod == nil || pod.UID == "" {
		klog.ErrorS(nil, "Ignoring pod status without a pod UID")
		return
	}
	if podrules.IsTerminal(msg.Status.Phase) {
		// A finished pod runs nothing more: nothing left to probe.
		m.stopWorkers(ctx, pod.UID, nil)
		return
	}
	view := m.pods[pod.UID]
	if view == nil {
		view = &podView{startedID: map[string]string{}}
		m.pods[pod.UID] = view
	}
	view.pod, view.podIP = pod, msg.Status.PodIP
	view.containers = containerViews(msg.Status)

	wanted := map[workerKey]bool{}
	for _, c := range probedContainers(pod) {
		for kind, p := range declaredProbes(c) {
			key := workerKey{uid: pod.UID, container: c.Name, kind: kind}
			wanted[key] = true
			if _, ok := m.workers[key]; ok {
				continue
			}
			spec, err := newProbeSpec(kind, p)
			if err != nil {
				klog.ErrorS(err, "Invalid probe, not running it", "pod", klog.KObj(pod), "podUID", pod.UID, "containerName", c.Name)
				continue
			}
			m.workers[key] = ctx.Spawn(workerProps(m.cfg, key, spec, c.DeepCopy()).Configure(actor.WithSupervisor(workerSupervisor())))
			m.states[key] = messages.ProbeState{ContainerName: c.Name, Kind: kind, Result: initialResult(kind)}
			klog.V(4).InfoS("Started probe worker", "pod", klog.KObj(pod), "podUID", pod.UID, "containerName", c.Name, "probeType", kind)
		}
	}
	m.stopWorkers(ctx, pod.UID, wanted)
	for _, c := range probedContainers(pod) {
		m.updateContainer(ctx, pod.UID, c)
	}
}

// updateContainer sends every worker of the container its current target.
func (m *manager) updateContainer(ctx actor.Context, uid types.UID, c *v1.Container) {
	view := m.pods[uid]
	if view == nil {
		return
	}
	cv := view.containers[c.Name]
	started := c.StartupProbe == nil || (cv.id != "" && view.startedID[c.Name] == cv.id)
	if _, ok := m.workers[workerKey{uid: uid, container: c.Name, kind: messages.Startup}]; c.StartupProbe != nil && !ok {
		started = true // an invalid startup probe does not run, so it cannot gate
	}
	for _, kind := range []messages.ProbeKind{messages.Startup, messages.Liveness, messages.Readiness} {
		pid, ok := m.workers[workerKey{uid: uid, container: c.Name, kind: kind}]
		if !ok {
			continue
		}
		ctx.Send(pid, &targetUpdate{
			pod:         view.pod,
			containerID: cv.id,
			running:     cv.running,
			startedAt:   cv.startedAt.Time,
			podIP:       view.podIP,
			started:     started,
		})
	}
}

// workerReport records a worker's state, opens the startup gate when a
// startup probe succeeds, and forwards changes to the parent.
func (m *manager) workerReport(ctx actor.Context, r *workerReport) {
	if pid, ok := m.workers[r.key]; !ok || !pid.Equal(r.from) {
		return // from a worker already stopped
	}
	m.states[r.key] = r.state
	if r.changed == nil {
		return
	}
	if r.key.kind == messages.Startup {
		if view := m.pods[r.key.uid]; view != nil {
			startedBefore := view.startedID[r.key.container] == r.changed.ContainerID
			if r.changed.Result == messages.ProbeSuccess {
				view.startedID[r.key.container] = r.changed.ContainerID
			} else if startedBefore {
				delete(view.startedID, r.key.container)
			}
			if c := findContainer(view.pod, r.key.container); c != nil && startedBefore != (r.changed.Result == messages.ProbeSuccess) {
				m.updateContainer(ctx, r.key.uid, c)
			}
		}
	}
	klog.V(2).InfoS("Probe result changed", "podUID", r.key.uid, "containerName", r.key.container, "probeType", r.key.kind, "result", r.changed.Result)
	if parent := ctx.Parent(); parent != nil {
		ctx.Send(parent, r.changed)
	}
}

// stopWorkers stops the pod's workers whose key is not in keep (all of
// them when keep is nil).
func (m *manager) stopWorkers(ctx actor.Context, uid types.UID, keep map[workerKey]bool) {
	for key, pid := range m.workers {
		if key.uid != uid || keep[key] {
			continue
		}
		ctx.Stop(pid)
		delete(m.workers, key)
		delete(m.states, key)
		klog.V(4).InfoS("Stopped probe worker", "podUID", uid, "containerName", key.container, "probeType", key.kind)
	}
}

func (m *manager) forget(ctx actor.Context, uid types.UID) {
	m.stopWorkers(ctx, uid, nil)
	delete(m.pods, uid)
}

// list returns the pod's probe states ordered by container then kind.
func (m *manager) list(uid types.UID) *messages.ProbeStates {
	out := &messages.ProbeStates{}
	for key, st := range m.states {
		if key.uid == uid {
			out.Probes = append(out.Probes, st)
		}
	}
	sort.Slice(out.Probes, func(i, j int) bool {
		a, b := out.Probes[i], out.Probes[j]
		if a.ContainerName != b.ContainerName {
			return a.ContainerName < b.ContainerName
		}
		return a.Kind < b.Kind
	})
	return out
}
