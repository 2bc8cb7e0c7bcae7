package publish

import (
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/messages/wire"
)

const (
	// DefaultMaxPayload is NATS's default max_payload (1 MiB), used when
	// the connection does not tell.
	DefaultMaxPayload = 1 << 20
	// PayloadHeadroom is kept free under max_payload for the message
	// headers JetStream and NATS add.
	PayloadHeadroom = 4 << 10
	// MaxPodTerminationMessageBytes is the kubelet's budget for all the
	// termination messages of one pod
	// (kubecontainer.MaxPodTerminationMessageLogLength); each container
	// status gets its share, as the kubelet's status manager cuts them.
	MaxPodTerminationMessageBytes = 12 << 10
	// shortMessageBytes is what each message is cut to when the status
	// still does not fit once the spec is left out.
	shortMessageBytes = 256
	// TruncatedAnnotation, on a published status, says what was left out
	// so that it fits in one bus message.
	TruncatedAnnotation = "actorlet.io/status-truncated"
)

// FitStatus encodes the pod for the status bucket within max bytes. Every
// status first gets the kubelet's normalisation (termination messages cut
// to MaxPodTerminationMessageBytes shared by its containers). A pod still
// too large is reduced step by step, each step marked in
// TruncatedAnnotation and logged at error level: the spec and annotations
// left out, then every message cut to shortMessageBytes, then only the
// pod's identity and phase kept. A status is never dropped for its size.
func FitStatus(pod *v1.Pod, max int) ([]byte, error) {
	limit := max - PayloadHeadroom
	normalizeMessages(&pod.Status, perContainerBudget(pod))
	data, err := json.Marshal(pod)
	if err != nil || len(data) <= limit {
		return data, err
	}
	full := len(data)
	steps := []struct {
		what  string
		apply func(*v1.Pod)
	}{
		{"spec and annotations", func(p *v1.Pod) {
			p.Spec = v1.PodSpec{NodeName: pod.Spec.NodeName}
			p.Annotations = keepAnnotations(pod.Annotations, StaticAnnotation, wire.StaticManifestAnnotation)
			p.ManagedFields = nil
		}},
		{"spec, annotations and long messages", func(p *v1.Pod) {
			normalizeMessages(&p.Status, shortMessageBytes)
		}},
		{"everything but the pod's identity and phase", func(p *v1.Pod) {
			*p = v1.Pod{
				TypeMeta: pod.TypeMeta,
				ObjectMeta: metav1.ObjectMeta{
					Name: p.Name, Namespace: p.Namespace, UID: p.UID,
					Annotations: keepAnnotations(pod.Annotations, StaticAnnotation, wire.StaticManifestAnnotation),
				},
				Spec: v1.PodSpec{NodeName: pod.Spec.NodeName},
				Status: v1.PodStatus{
					Phase: pod.Status.Phase, Reason: pod.Status.Reason, QOSClass: pod.Status.QOSClass,
					Message: fmt.Sprintf("status of %d bytes too large for the bus (max_payload %d)", full, max),
				},
			}
		}},
	}
	reduced := pod.DeepCopy()
	for _, step := range steps {
		step.apply(reduced)
		if reduced.Annotations == nil {
			reduced.Annotations = map[string]string{}
		}
		reduced.Annotations[TruncatedAnnotation] = fmt.Sprintf("left out %s: the status was %d bytes, over the bus max_payload of %d", step.what, full, max)
		data, err = json.Marshal(reduced)
		if err != nil {
			return nil, err
		}
		if len(data) <= limit {
			klog.ErrorS(nil, "Pod status too large for the bus, publishing it truncated", "pod", klog.KObj(pod),
				"bytes", full, "maxPayload", max, "leftOut", step.what)
			return data, nil
		}
	}
	// Only a pathological identity (names are bounded by validation) gets
	// here; the write fails with a clear error and is not retried.
	return data, nil
}

// perContainerBudget is the kubelet's share of the termination-message
// budget for each of the pod's containers.
func perContainerBudget(pod *v1.Pod) int {
	n := len(pod.Spec.Containers) + len(pod.Spec.InitContainers) + len(pod.Spec.EphemeralContainers)
	if n == 0 {
		return MaxPodTerminationMessageBytes
	}
	return MaxPodTerminationMessageBytes / n
}

// normalizeMessages cuts the container states' messages to n bytes (the
// kubelet's status manager cuts terminated messages; here waiting ones,
// which carry runtime errors, are bounded as well).
func normalizeMessages(s *v1.PodStatus, n int) {
	cut := func(m *string) {
		if len(*m) > n {
			*m = (*m)[:n]
		}
	}
	state := func(st *v1.ContainerState) {
		if st.Terminated != nil {
			cut(&st.Terminated.Message)
		}
		if st.Waiting != nil {
			cut(&st.Waiting.Message)
		}
	}
	for _, list := range [][]v1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses, s.EphemeralContainerStatuses} {
		for i := range list {
			state(&list[i].State)
			state(&list[i].LastTerminationState)
		}
	}
	if n == shortMessageBytes {
		cut(&s.Message)
		for i := range s.Conditions {
			cut(&s.Conditions[i].Message)
		}
	}
}

func keepAnnotations(in map[string]string, keys ...string) map[string]string {
	var out map[string]string
	for _, k := range keys {
		if v, ok := in[k]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}
