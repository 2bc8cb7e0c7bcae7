package agent

import (
	"context"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/cri/crilogs"
	"github.com/actorlet/actorlet/messages"
)

// startLogRotation rotates the running containers' logs as the kubelet's
// container log manager does, through CRI ReopenContainerLog (the process
// runtime and containerd both serve it). A runtime without the call
// (an in-memory test runtime) gets no rotation.
func (a *Agent) startLogRotation(ctx context.Context) error {
	reopener, ok := a.runtime.(cri.LogReopener)
	if !ok {
		klog.InfoS("Container log rotation off: the runtime cannot reopen container logs")
		return nil
	}
	size := resource.MustParse(a.cfg.ContainerLogMaxSize) // checked by Config.complete
	rt := struct {
		cri.RuntimeService
		cri.LogReopener
	}{a.runtime, reopener}
	m, err := crilogs.NewManager(rt, crilogs.Policy{MaxSize: size.Value(), MaxFiles: a.cfg.ContainerLogMaxFiles},
		a.cfg.ContainerLogMonitorInterval, clock.RealClock{})
	if err != nil {
		return err
	}
	a.logs = m
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	a.onShutdown(func() { cancel(); <-done })
	klog.InfoS("Container log rotation on", "maxSize", a.cfg.ContainerLogMaxSize, "maxFiles", a.cfg.ContainerLogMaxFiles,
		"interval", a.cfg.ContainerLogMonitorInterval)
	return nil
}

// observeLifecycle sees the PLEG's events: a container that started or
// died has the log manager list the running containers again, so a new
// log is measured from its first second while a node whose containers do
// not change makes no list between the manager's passes.
func (a *Agent) observeLifecycle(ev messages.PodLifecycleEvent) {
	if a.logs == nil {
		return
	}
	switch ev.Type {
	case messages.ContainerStarted, messages.ContainerDied, messages.ContainerRemoved:
		a.logs.ContainersChanged()
	}
}
