package prober

import (
	v1 "k8s.io/api/core/v1"
)

// probedContainers returns the containers that may declare probes: the
// regular containers and the restartable (sidecar) init containers.
func probedContainers(pod *v1.Pod) []*v1.Container {
	var out []*v1.Container
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			out = append(out, c)
		}
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

// findContainer finds a probed container by name.
func findContainer(pod *v1.Pod, name string) *v1.Container {
	if pod == nil {
		return nil
	}
	for _, c := range probedContainers(pod) {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// containerViews indexes the pod status's container states by name.
func containerViews(status v1.PodStatus) map[string]containerView {
	out := map[string]containerView{}
	add := func(statuses []v1.ContainerStatus) {
		for _, cs := range statuses {
			cv := containerView{id: cs.ContainerID}
			if r := cs.State.Running; r != nil {
				cv.running, cv.startedAt = true, r.StartedAt
			}
			out[cs.Name] = cv
		}
	}
	add(status.InitContainerStatuses)
	add(status.ContainerStatuses)
	return out
}
