package pleg

import (
	"reflect"
	"testing"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages"
)

func TestPodEvents(t *testing.T) {
	const uid = "u1"
	pod := func(sandbox cri.ContainerState, cs ...*cri.Container) *cri.Pod {
		p := &cri.Pod{ID: uid, Containers: cs}
		if sandbox != "" {
			p.Sandboxes = []*cri.Container{{ID: "sb", State: sandbox}}
		}
		return p
	}
	c := func(id string, s cri.ContainerState) *cri.Container { return &cri.Container{ID: id, State: s} }
	ev := func(typ messages.PodLifecycleEventType, id string) messages.PodLifecycleEvent {
		return messages.PodLifecycleEvent{PodUID: uid, Type: typ, ContainerID: id}
	}
	running, exited, created, unknown := cri.ContainerStateRunning, cri.ContainerStateExited, cri.ContainerStateCreated, cri.ContainerStateUnknown

	tests := []struct {
		name     string
		old, cur *cri.Pod
		want     []messages.PodLifecycleEvent
	}{
		{"nothing changed", pod(running, c("a", running)), pod(running, c("a", running)), nil},
		{"new running container", nil, pod("", c("a", running)), []messages.PodLifecycleEvent{ev(messages.ContainerStarted, "a")}},
		{"running to exited", pod("", c("a", running)), pod("", c("a", exited)), []messages.PodLifecycleEvent{ev(messages.ContainerDied, "a")}},
		{"new exited container", nil, pod("", c("a", exited)), []messages.PodLifecycleEvent{ev(messages.ContainerDied, "a")}},
		{"created", nil, pod("", c("a", created)), []messages.PodLifecycleEvent{ev(messages.ContainerChanged, "a")}},
		{"unknown", pod("", c("a", running)), pod("", c("a", unknown)), []messages.PodLifecycleEvent{ev(messages.ContainerChanged, "a")}},
		{"created to running", pod("", c("a", created)), pod("", c("a", running)), []messages.PodLifecycleEvent{ev(messages.ContainerStarted, "a")}},
		{"exited then removed", pod("", c("a", exited)), pod("", nil...), []messages.PodLifecycleEvent{ev(messages.ContainerRemoved, "a")}},
		{"running then removed", pod("", c("a", running)), pod(""), []messages.PodLifecycleEvent{ev(messages.ContainerDied, "a"), ev(messages.ContainerRemoved, "a")}},
		{"pod vanished", pod("", c("a", exited), c("b", running)), nil, []messages.PodLifecycleEvent{
			ev(messages.ContainerRemoved, "a"), ev(messages.ContainerDied, "b"), ev(messages.ContainerRemoved, "b")}},
		{"restart: old exited, new running", pod("", c("a", exited)), pod("", c("a", exited), c("b", running)), []messages.PodLifecycleEvent{ev(messages.ContainerStarted, "b")}},
		{"sandbox appeared", nil, pod(running), []messages.PodLifecycleEvent{ev(messages.SandboxChanged, "")}},
		{"sandbox not ready", pod(running, c("a", running)), pod(exited, c("a", running)), []messages.PodLifecycleEvent{ev(messages.SandboxChanged, "")}},
		{"sandbox and container changed", pod(running, c("a", running)), pod(exited, c("a", exited)), []messages.PodLifecycleEvent{ev(messages.ContainerDied, "a"), ev(messages.SandboxChanged, "")}},
		{"sandbox removed", pod(exited), pod(""), []messages.PodLifecycleEvent{ev(messages.SandboxChanged, "")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := podEvents(uid, tt.old, tt.cur)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("podEvents() = %v, want %v", got, tt.want)
			}
		})
	}
}
