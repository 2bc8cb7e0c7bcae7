package supervisor

import (
	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/messages"
)

// objectChanged syncs the running pods that reference the changed
// ConfigMap or Secret: a sync rewrites the volumes that project it, and
// starts a container that was waiting for it; a running container whose
// env reads it is not restarted (its spec did not change).
func (s *supervisor) objectChanged(ctx actor.Context, m *messages.ObjectChanged) {
	n := 0
	for uid, d := range s.pods {
		if d.rejected || d.done || d.pod == nil || d.pod.Namespace != m.Namespace || !podUses(d.pod, m.Kind, m.Name) {
			continue
		}
		if s.liveWorker(uid) != nil {
			s.dispatch(ctx, uid, messages.SyncPod{UpdateType: messages.SyncPodSync, Pod: d.pod, StartTime: s.cfg.Clock.Now()})
			n++
		}
	}
	if n > 0 {
		klog.V(2).InfoS("Syncing pods whose volumes use a changed object", "kind", m.Kind, "namespace", m.Namespace, "name", m.Name, "pods", n)
	}
}

// podUses reports whether pod references the named object in a volume,
// env, envFrom or imagePullSecrets (a pull secret that arrives late lets
// the next pull use it).
func podUses(pod *v1.Pod, kind, name string) bool {
	if volumeUses(pod, kind, name) {
		return true
	}
	if kind == "Secret" {
		for _, ref := range pod.Spec.ImagePullSecrets {
			if ref.Name == name {
				return true
			}
		}
	}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			for _, f := range c.EnvFrom {
				if (kind == "ConfigMap" && f.ConfigMapRef != nil && f.ConfigMapRef.Name == name) ||
					(kind == "Secret" && f.SecretRef != nil && f.SecretRef.Name == name) {
					return true
				}
			}
			for _, e := range c.Env {
				if e.ValueFrom == nil {
					continue
				}
				if (kind == "ConfigMap" && e.ValueFrom.ConfigMapKeyRef != nil && e.ValueFrom.ConfigMapKeyRef.Name == name) ||
					(kind == "Secret" && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == name) {
					return true
				}
			}
		}
	}
	return false
}

// volumeUses reports whether a volume of pod projects the named object.
func volumeUses(pod *v1.Pod, kind, name string) bool {
	for _, vol := range pod.Spec.Volumes {
		s := vol.VolumeSource
		switch {
		case kind == "ConfigMap" && s.ConfigMap != nil && s.ConfigMap.Name == name,
			kind == "Secret" && s.Secret != nil && s.Secret.SecretName == name:
			return true
		case s.Projected != nil:
			for _, src := range s.Projected.Sources {
				if (kind == "ConfigMap" && src.ConfigMap != nil && src.ConfigMap.Name == name) ||
					(kind == "Secret" && src.Secret != nil && src.Secret.Name == name) {
					return true
				}
			}
		}
	}
	return false
}
