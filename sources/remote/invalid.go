package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/messages/wire"
)

// statusWriteTimeout bounds one status bucket write or read.
const statusWriteTimeout = 5 * time.Second

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
	if err := s.writeStatus(ctx, pod); err != nil {
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

func (s *Source) writeStatus(ctx context.Context, pod *v1.Pod) error {
	data, err := json.Marshal(pod)
	if err != nil {
		return fmt.Errorf("encode status of %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, statusWriteTimeout)
	defer cancel()
	key := wire.StatusKey(s.cfg.NodeName, pod.Namespace, pod.Name)
	if _, err := s.status.Put(ctx, key, data); err != nil {
		return fmt.Errorf("put status %q: %w", key, err)
	}
	subject := wire.StatusSubject(s.cfg.NodeName, pod.Namespace, pod.Name)
	if err := s.cfg.Conn.NC.Publish(subject, data); err != nil {
		return fmt.Errorf("publish status on %q: %w", subject, err)
	}
	return nil
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
// FailedValidation one (also one left by an earlier run of the agent). The
// delete is conditional on the revision read, so a status the status
// manager wrote in between is kept.
func (s *Source) clearFailedStatus(ctx context.Context, dk wire.DesiredKey) {
	ctx, cancel := context.WithTimeout(ctx, statusWriteTimeout)
	defer cancel()
	key := wire.StatusKey(s.cfg.NodeName, dk.Namespace, dk.Name)
	e, err := s.status.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return
	}
	if err != nil {
		klog.ErrorS(err, "Reading pod status failed", "statusKey", key)
		return
	}
	var pod v1.Pod
	if err := json.Unmarshal(e.Value(), &pod); err != nil || pod.Status.Reason != FailedValidationReason {
		return
	}
	err = s.status.Delete(ctx, key, jetstream.LastRevision(e.Revision()))
	if err != nil && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		klog.ErrorS(err, "Clearing the FailedValidation status failed", "statusKey", key)
		return
	}
	klog.V(2).InfoS("Cleared FailedValidation status", "statusKey", key)
}
