package remote

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/messages/wire"
)

// reject reports an entry that cannot be run: a log line, a
// FailedValidation event, OnInvalid, and (when the key names a pod and no
// earlier valid version of it is running) a Failed status entry, so that
// listing pods shows why it never started. A key that does not parse has no
// status entry to write. When an earlier valid version was delivered it keeps
// running with its last valid spec: a typo must not take a workload down.
func (s *Source) reject(ctx context.Context, key string, dk *wire.DesiredKey, err error, keptPrevious bool) {
	s.rejected[key] = true
	msg := err.Error()
	if keptPrevious {
		msg += " (the pod keeps running with its last valid spec)"
	}
	klog.ErrorS(err, "Rejected desired pod", "key", key, "node", s.cfg.NodeName, "keptPrevious", keptPrevious)
	pod := s.stubPod(key, dk)
	if s.cfg.Recorder != nil {
		s.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, FailedValidationReason, "Rejected desired pod %s: %s", key, msg)
	}
	if s.cfg.OnInvalid != nil {
		s.cfg.OnInvalid(key, err)
	}
	if dk == nil || keptPrevious {
		return
	}
	pod.Status = v1.PodStatus{
		Phase:   v1.PodFailed,
		Reason:  FailedValidationReason,
		Message: msg,
	}
	if err := s.cfg.Statuses.WriteNow(ctx, pod); err != nil {
		klog.ErrorS(err, "Writing the FailedValidation status failed", "key", key, "pod", klog.KObj(pod))
	}
}

// stubPod names the pod a rejected key was meant to be.
func (s *Source) stubPod(key string, dk *wire.DesiredKey) *v1.Pod {
	pod := &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: wire.EncodeName(key)},
	}
	if dk != nil {
		pod.Namespace, pod.Name = dk.Namespace, dk.Name
	}
	s.stamp(pod, key)
	return pod
}

// clearRejected forgets that key's latest value was rejected, removing the
// Failed status entry written for it.
func (s *Source) clearRejected(ctx context.Context, key string) {
	if !s.rejected[key] {
		return
	}
	delete(s.rejected, key)
	if dk, err := wire.ParseDesiredKey(key); err == nil {
		s.clearFailedStatus(ctx, dk)
	}
}

// clearFailedStatus deletes the pod's status entry if it is a
// FailedValidation one (also one left by an earlier run of the agent); a
// status the status manager wrote in between is kept.
func (s *Source) clearFailedStatus(ctx context.Context, dk wire.DesiredKey) {
	failed := func(pod *v1.Pod) bool { return pod.Status.Reason == FailedValidationReason }
	if s.cfg.Statuses.DeleteIf(ctx, dk.Namespace, dk.Name, failed) {
		klog.V(2).InfoS("Cleared FailedValidation status", "pod", klog.KRef(dk.Namespace, dk.Name))
	}
}
