package pleg

import (
	"sort"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages"
	"k8s.io/apimachinery/pkg/types"
)

// containerState is a container's state as PLEG compares it between two
// relists; "absent" means the runtime no longer lists it.
type containerState string

const (
	stateRunning containerState = "running"
	stateExited  containerState = "exited"
	stateUnknown containerState = "unknown" // created or unknown
	stateAbsent  containerState = "absent"
)

func toState(s cri.ContainerState) containerState {
	switch s {
	case cri.ContainerStateRunning:
		return stateRunning
	case cri.ContainerStateExited:
		return stateExited
	}
	return stateUnknown
}

// containerEvents says what happened to one container between two relists:
// now running → started; now exited → died; created/unknown → changed;
// gone → removed (after died when it was not yet seen exited).
func containerEvents(uid types.UID, id string, old, cur containerState) []messages.PodLifecycleEvent {
	if old == cur {
		return nil
	}
	ev := func(t messages.PodLifecycleEventType) messages.PodLifecycleEvent {
		return messages.PodLifecycleEvent{PodUID: uid, Type: t, ContainerID: id}
	}
	switch cur {
	case stateRunning:
		return []messages.PodLifecycleEvent{ev(messages.ContainerStarted)}
	case stateExited:
		return []messages.PodLifecycleEvent{ev(messages.ContainerDied)}
	case stateUnknown:
		return []messages.PodLifecycleEvent{ev(messages.ContainerChanged)}
	case stateAbsent:
		if old == stateExited {
			return []messages.PodLifecycleEvent{ev(messages.ContainerRemoved)}
		}
		// It was running (or never seen to stop) and vanished: it died too.
		return []messages.PodLifecycleEvent{ev(messages.ContainerDied), ev(messages.ContainerRemoved)}
	}
	return nil
}

// states indexes a pod's containers (or sandboxes) by ID.
func states(cs []*cri.Container) map[string]containerState {
	m := make(map[string]containerState, len(cs))
	for _, c := range cs {
		if c != nil {
			m[c.ID] = toState(c.State)
		}
	}
	return m
}

// unionIDs returns the keys of both maps, sorted, so events come out in a
// stable order.
func unionIDs(a, b map[string]containerState) []string {
	ids := make([]string, 0, len(a)+len(b))
	for id := range a {
		ids = append(ids, id)
	}
	for id := range b {
		if _, ok := a[id]; !ok {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

func stateOf(m map[string]containerState, id string) containerState {
	if s, ok := m[id]; ok {
		return s
	}
	return stateAbsent
}

// podEvents diffs one pod between the previous relist (old) and this one
// (cur); either may be nil. Container changes become container events; any
// sandbox change becomes one SandboxChanged.
func podEvents(uid types.UID, old, cur *cri.Pod) []messages.PodLifecycleEvent {
	var oldC, curC, oldS, curS map[string]containerState
	if old != nil {
		oldC, oldS = states(old.Containers), states(old.Sandboxes)
	}
	if cur != nil {
		curC, curS = states(cur.Containers), states(cur.Sandboxes)
	}

	var events []messages.PodLifecycleEvent
	for _, id := range unionIDs(oldC, curC) {
		events = append(events, containerEvents(uid, id, stateOf(oldC, id), stateOf(curC, id))...)
	}
	for _, id := range unionIDs(oldS, curS) {
		if stateOf(oldS, id) != stateOf(curS, id) {
			events = append(events, messages.PodLifecycleEvent{PodUID: uid, Type: messages.SandboxChanged})
			break
		}
	}
	return events
}

// indexPods maps pods by UID.
func indexPods(pods []*cri.Pod) map[types.UID]*cri.Pod {
	m := make(map[types.UID]*cri.Pod, len(pods))
	for _, p := range pods {
		if p != nil {
			m[p.ID] = p
		}
	}
	return m
}

// sortedUIDs returns the UIDs of both maps in a stable order.
func sortedUIDs(a, b map[types.UID]*cri.Pod) []types.UID {
	uids := make([]types.UID, 0, len(a)+len(b))
	for uid := range a {
		uids = append(uids, uid)
	}
	for uid := range b {
		if _, ok := a[uid]; !ok {
			uids = append(uids, uid)
		}
	}
	sort.Slice(uids, func(i, j int) bool { return uids[i] < uids[j] })
	return uids
}
