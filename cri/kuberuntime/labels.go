package kuberuntime

import (
	"encoding/json"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/cri"
)

// Labels and annotations the manager puts on sandboxes and containers; the
// runtime hands them back, which is how a runtime pod is tied to its v1.Pod
// (and how an orphan can be named and killed without its spec).
const (
	LabelPodName       = cri.LabelPodName
	LabelPodNamespace  = cri.LabelPodNamespace
	LabelPodUID        = cri.LabelPodUID
	LabelContainerName = "io.kubernetes.container.name"
	LabelNode          = cri.LabelNode

	AnnotationContainerHash          = "io.kubernetes.container.hash"
	AnnotationRestartCount           = "io.kubernetes.container.restartCount"
	AnnotationTerminationMessagePath = "io.kubernetes.container.terminationMessagePath"
	// AnnotationTerminationMessagePolicy is File or FallbackToLogsOnError.
	AnnotationTerminationMessagePolicy = "io.kubernetes.container.terminationMessagePolicy"
	AnnotationTerminationGracePeriod   = "io.kubernetes.pod.terminationGracePeriod"
	AnnotationPreStopHandler           = "io.kubernetes.container.preStopHandler"
	AnnotationContainerPorts           = "io.kubernetes.container.ports"
)

func podLabels(pod *v1.Pod, node string) map[string]string {
	labels := make(map[string]string, len(pod.Labels)+4)
	for k, v := range pod.Labels {
		labels[k] = v
	}
	if node != "" {
		labels[LabelNode] = node
	}
	labels[LabelPodName] = pod.Name
	labels[LabelPodNamespace] = pod.Namespace
	labels[LabelPodUID] = string(pod.UID)
	return labels
}

func containerLabels(pod *v1.Pod, c *v1.Container, node string) map[string]string {
	labels := podLabels(pod, node)
	labels[LabelContainerName] = c.Name
	return labels
}

func containerAnnotations(pod *v1.Pod, c *v1.Container, restartCount int) map[string]string {
	a := map[string]string{
		AnnotationContainerHash:            strconv.FormatUint(hashContainer(c), 16),
		AnnotationRestartCount:             strconv.Itoa(restartCount),
		AnnotationTerminationMessagePath:   c.TerminationMessagePath,
		AnnotationTerminationMessagePolicy: string(c.TerminationMessagePolicy),
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		a[AnnotationTerminationGracePeriod] = strconv.FormatInt(*g, 10)
	}
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		if b, err := json.Marshal(c.Lifecycle.PreStop); err == nil {
			a[AnnotationPreStopHandler] = string(b)
		}
	}
	if len(c.Ports) > 0 {
		if b, err := json.Marshal(c.Ports); err == nil {
			a[AnnotationContainerPorts] = string(b)
		}
	}
	return a
}

// containerInfo is what the runtime's labels and annotations say about a
// container instance.
type containerInfo struct {
	podUID       types.UID
	podName      string
	podNamespace string
	name         string
	hash         uint64
	restartCount int
	grace        *int64
	preStop      *v1.LifecycleHandler
	ports        []v1.ContainerPort
}

func parseContainerInfo(labels, annotations map[string]string) containerInfo {
	info := containerInfo{
		podUID:       types.UID(labels[LabelPodUID]),
		podName:      labels[LabelPodName],
		podNamespace: labels[LabelPodNamespace],
		name:         labels[LabelContainerName],
	}
	if s, ok := annotations[AnnotationContainerHash]; ok {
		if h, err := strconv.ParseUint(s, 16, 64); err == nil {
			info.hash = h
		} else {
			klog.V(4).InfoS("Ignoring malformed container hash annotation", "value", s)
		}
	}
	if s, ok := annotations[AnnotationRestartCount]; ok {
		if n, err := strconv.Atoi(s); err == nil {
			info.restartCount = n
		}
	}
	if s, ok := annotations[AnnotationTerminationGracePeriod]; ok {
		if g, err := strconv.ParseInt(s, 10, 64); err == nil {
			info.grace = &g
		}
	}
	if s, ok := annotations[AnnotationPreStopHandler]; ok {
		h := &v1.LifecycleHandler{}
		if err := json.Unmarshal([]byte(s), h); err == nil {
			info.preStop = h
		}
	}
	if s, ok := annotations[AnnotationContainerPorts]; ok {
		_ = json.Unmarshal([]byte(s), &info.ports)
	}
	return info
}
