package remote

import (
	"crypto/sha1"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/validation"
	"github.com/actorlet/actorlet/messages/wire"
)

// DesiredKeyAnnotation records on every delivered pod the DesiredBucket key
// it came from, so Finalize can find it.
const DesiredKeyAnnotation = "actorlet.io/desired-key"

// FailedValidationReason is the event and status reason of a rejected entry.
const FailedValidationReason = "FailedValidation"

// verdict is what an entry's value means for this node.
type verdict int

const (
	accepted verdict = iota // pod is set
	ignored                 // a fleet pod whose nodeSelector does not match
	rejected                // err says why
)

// admit turns an entry's value into the pod this node delivers.
func (s *Source) admit(key wire.DesiredKey, raw string, data []byte) (*v1.Pod, verdict, error) {
	pod, err := validation.DecodePod(data)
	if err != nil {
		return nil, rejected, err
	}
	if key.Fleet {
		n := s.currentNode()
		if _, running := s.delivered[raw]; running {
			// Running here: only a changed selector or affinity moves it
			// (taints act through NoExecute, see placement.go).
			if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(n.node); !ok {
				return nil, ignored, nil
			}
		} else if ok, why := n.fits(pod); !ok {
			klog.V(3).InfoS("Fleet pod does not fit this node", "key", raw, "reason", why)
			return nil, ignored, nil
		}
	}
	if pod.Name == "" {
		pod.Name = key.Name
	}
	if pod.Namespace == "" {
		pod.Namespace = key.Namespace
	}
	if pod.Name != key.Name || pod.Namespace != key.Namespace {
		return nil, rejected, fmt.Errorf("key %q names pod %s/%s but metadata names %s/%s",
			raw, key.Namespace, key.Name, pod.Namespace, pod.Name)
	}
	validation.SetDefaults(pod)
	if pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds == nil {
		grace := *pod.Spec.TerminationGracePeriodSeconds
		pod.DeletionGracePeriodSeconds = &grace
	}
	if err := validation.ValidatePod(pod); err != nil {
		return nil, rejected, err
	}
	s.stamp(pod, raw)
	pod.Status = v1.PodStatus{} // operators describe what they want, not what is (see transition)
	return pod, accepted, nil
}

// stamp sets what every pod from this source carries: source annotation,
// key annotation, a stable UID, this node's name.
func (s *Source) stamp(pod *v1.Pod, raw string) {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[messages.ConfigSourceAnnotation] = messages.SourceRemote
	pod.Annotations[DesiredKeyAnnotation] = raw
	if pod.UID == "" {
		pod.UID = s.uidFor(raw)
	}
	pod.Spec.NodeName = s.cfg.NodeName
}

// uidFor derives a UID from the node and key (an RFC 4122 version 5 style
// name-based UUID), so every update of a key keeps its pod's UID, across
// agent restarts too.
func (s *Source) uidFor(key string) types.UID {
	sum := sha1.Sum([]byte("actorlet/" + wire.DesiredBucket + "/" + s.cfg.NodeName + "/" + key))
	sum[6] = (sum[6] & 0x0f) | 0x50
	sum[8] = (sum[8] & 0x3f) | 0x80
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16]))
}
