package podactor

import (
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages"
)

// A part is one per-pod concern of the worker (in the spirit of Nomad's
// allocrunner hooks): the active deadline (deadline.go), the retry at a
// back-off's end (retry.go), the probe results a sync needs, an operator's
// restart requests. Each has the same life:
//
//   - start: its zero value (a map made in Props), idle;
//   - on a sync result: told by syncDone, in the order written there (the
//     parts' own inputs differ, so it is no method here);
//   - terminating: the pod started terminating; the part drops what only a
//     sync would use and stops its timer;
//   - stop: the actor stops or is restarted by supervision.
type part interface {
	terminating()
	stop()
}

// parts lists every part, for the transitions that concern them all.
func (a *podActor) parts() []part {
	return []part{&a.deadline, &a.retry, &a.probes, &a.restarts}
}

// probeFailure is a liveness or startup failure of one container instance.
type probeFailure struct {
	containerID string
	message     string
	startup     bool // the startup probe failed (else liveness)
}

// probeResults are the probe results a sync passes to SyncPod: liveness and
// startup failures by container name (the runtime restarts those
// instances), and startup successes (a sidecar with a startup probe holds
// back the next container until then), container name → the instance.
type probeResults struct {
	failed  map[string]probeFailure
	started map[string]string
}

func newProbeResults() probeResults {
	return probeResults{failed: map[string]probeFailure{}, started: map[string]string{}}
}

// result records a liveness or startup result and reports whether it calls
// for a sync: a failure (the container is restarted), or the startup
// success of a sidecar of pod (the next container may start).
func (p *probeResults) result(pod *v1.Pod, m *messages.ProbeResultChanged) (sync bool) {
	if m.Kind == messages.Readiness {
		return false
	}
	if m.Kind == messages.Startup {
		if m.Result == messages.ProbeSuccess {
			p.started[m.ContainerName] = runtimeContainerID(m.ContainerID)
			sync = pod != nil && isSidecar(pod, m.ContainerName)
		} else {
			delete(p.started, m.ContainerName)
		}
	}
	if m.Result != messages.ProbeFailure {
		delete(p.failed, m.ContainerName)
		return sync
	}
	p.failed[m.ContainerName] = probeFailure{containerID: runtimeContainerID(m.ContainerID), message: m.Message, startup: m.Kind == messages.Startup}
	return true
}

// synced forgets the results of containers the sync found replaced.
func (p *probeResults) synced(s *cri.PodStatus) {
	if s == nil {
		return
	}
	for name, f := range p.failed {
		if c := s.FindContainerStatusByName(name); c != nil && c.ID != f.containerID {
			delete(p.failed, name)
		}
	}
	for name, id := range p.started {
		if c := s.FindContainerStatusByName(name); c != nil && c.ID != id {
			delete(p.started, name)
		}
	}
}

// forSync is the probes argument of SyncPod, by container ID.
func (p *probeResults) forSync() cri.Probes {
	if len(p.failed) == 0 && len(p.started) == 0 {
		return nil
	}
	out := make(cri.Probes, len(p.failed)+len(p.started))
	for _, id := range p.started {
		out[id] = cri.ProbeState{Started: true}
	}
	for _, f := range p.failed {
		s := out[f.containerID]
		s.Failed, s.Message, s.Startup = true, f.message, f.startup
		out[f.containerID] = s
	}
	return out
}

// terminating forgets every result: a kill needs none.
func (p *probeResults) terminating() { *p = newProbeResults() }

func (p *probeResults) stop() {}

// probeResult passes a liveness or startup result to the probe part and
// syncs the pod when it calls for it.
func (a *podActor) probeResult(ctx actor.Context, m *messages.ProbeResultChanged) {
	if a.probes.result(a.pod, m) && a.state == syncing && a.pod != nil {
		a.update(ctx, &messages.SyncPod{UpdateType: messages.SyncPodSync, Pod: a.pod, StartTime: a.cfg.Clock.Now()})
	}
}

// runtimeContainerID turns the API form of a container ID
// ("<runtime>://<id>", as in v1.ContainerStatus and so in probe results)
// into the runtime's ID, the form cri.PodStatus and SyncPod use.
func runtimeContainerID(id string) string {
	if _, after, ok := strings.Cut(id, "://"); ok {
		return after
	}
	return id
}

// isSidecar reports whether name is a restartable init container of pod.
func isSidecar(pod *v1.Pod, name string) bool {
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.Name == name {
			return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
		}
	}
	return false
}

// restartRequests are an operator's RestartPod requests not yet passed to
// a sync: containers by name, or all of them.
type restartRequests struct {
	names []string
	all   bool
}

// take hands the requests to the next sync and forgets them.
func (r *restartRequests) take() (names []string, all bool) {
	names, all = r.names, r.all
	*r = restartRequests{}
	return names, all
}

// terminating drops the requests: a kill restarts nothing.
func (r *restartRequests) terminating() { *r = restartRequests{} }

func (r *restartRequests) stop() {}

// restartPod records an operator's restart of the named container (all
// when none is named) and syncs; the sync kills them and starts them again.
func (a *podActor) restartPod(ctx actor.Context, m *messages.RestartPod) {
	if a.state != syncing || a.pod == nil {
		klog.InfoS("Ignoring restart of a pod that is not running", "podUID", a.uid, "state", a.state.workType())
		return
	}
	if m.Container == "" {
		a.restarts.all = true
	} else {
		a.restarts.names = append(a.restarts.names, m.Container)
	}
	a.update(ctx, &messages.SyncPod{UpdateType: messages.SyncPodSync, Pod: a.pod, StartTime: a.cfg.Clock.Now()})
}
