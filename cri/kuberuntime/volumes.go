package kuberuntime

import (
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/cri/volume"
)

// isProjected: the volume's files are written by the agent (atomic
// writer): downwardAPI, configMap, secret, projected.
func isProjected(vol *v1.Volume) bool {
	s := vol.VolumeSource
	return s.DownwardAPI != nil || s.ConfigMap != nil || s.Secret != nil || s.Projected != nil
}

// projectedPath is <PodsDir>/<uid>/volumes/projected/<name>.
func (m *Manager) projectedPath(pod *v1.Pod, volume string) string {
	return filepath.Join(m.opts.PodsDir, string(pod.UID), "volumes", "projected", volume)
}

// projectedPayload computes the files of a projected-type volume.
func (m *Manager) projectedPayload(pod *v1.Pod, vol *v1.Volume) (map[string]volume.File, error) {
	s := vol.VolumeSource
	switch {
	case s.DownwardAPI != nil:
		return volume.DownwardAPIPayload(pod, s.DownwardAPI.Items, s.DownwardAPI.DefaultMode, m.opts.Allocatable)
	case s.ConfigMap != nil:
		return m.configMapPayload(pod, s.ConfigMap.Name, s.ConfigMap.Items, s.ConfigMap.DefaultMode, s.ConfigMap.Optional)
	case s.Secret != nil:
		return m.secretPayload(pod, s.Secret.SecretName, s.Secret.Items, s.Secret.DefaultMode, s.Secret.Optional)
	case s.Projected != nil:
		out := map[string]volume.File{}
		for i, src := range s.Projected.Sources {
			var part map[string]volume.File
			var err error
			switch {
			case src.DownwardAPI != nil:
				part, err = volume.DownwardAPIPayload(pod, src.DownwardAPI.Items, s.Projected.DefaultMode, m.opts.Allocatable)
			case src.ConfigMap != nil:
				part, err = m.configMapPayload(pod, src.ConfigMap.Name, src.ConfigMap.Items, s.Projected.DefaultMode, src.ConfigMap.Optional)
			case src.Secret != nil:
				part, err = m.secretPayload(pod, src.Secret.Name, src.Secret.Items, s.Projected.DefaultMode, src.Secret.Optional)
			case src.ServiceAccountToken != nil:
				err = fmt.Errorf("serviceAccountToken: not supported (no API server to issue tokens)")
			default:
				err = fmt.Errorf("unsupported source (downwardAPI, configMap, secret)")
			}
			if err != nil {
				return nil, fmt.Errorf("projected.sources[%d]: %w", i, err)
			}
			for p, f := range part {
				out[p] = f
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("volume %q: not a projected type", vol.Name)
}

// writeProjectedVolume writes the volume's current content atomically.
func (m *Manager) writeProjectedVolume(pod *v1.Pod, vol *v1.Volume) error {
	payload, err := m.projectedPayload(pod, vol)
	if err != nil {
		return fmt.Errorf("volume %q: %w", vol.Name, err)
	}
	if sc := pod.Spec.SecurityContext; sc != nil && sc.FSGroup != nil {
		// The group-read bits SetOwnership gives are part of the payload,
		// so an unchanged volume compares equal and is not written again.
		for p, f := range payload {
			f.Mode |= volume.ReadOnlyGroupBits
			payload[p] = f
		}
	}
	changed, err := volume.Write(m.projectedPath(pod, vol.Name), payload)
	if err != nil {
		return fmt.Errorf("volume %q: %w", vol.Name, err)
	}
	if err := setFSGroup(pod, m.projectedPath(pod, vol.Name), true); err != nil {
		return fmt.Errorf("volume %q: %w", vol.Name, err)
	}
	if changed {
		klog.V(3).InfoS("Updated volume", "pod", klog.KObj(pod), "volume", vol.Name, "files", len(payload))
	}
	return nil
}

// refreshVolumes rewrites the projected volumes already set up, so a
// change (labels, annotations, a ConfigMap or Secret) reaches running
// containers within a sync. Volumes no container mounted yet are written
// when one is started.
func (m *Manager) refreshVolumes(pod *v1.Pod) {
	if m.opts.PodsDir == "" {
		return
	}
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if !isProjected(vol) || !dirExists(m.projectedPath(pod, vol.Name)) {
			continue
		}
		if err := m.writeProjectedVolume(pod, vol); err != nil {
			m.event(pod, v1.EventTypeWarning, "FailedMount", "MountVolume.SetUp failed for volume %q: %v", vol.Name, err)
		}
	}
}

// setFSGroup gives a volume directory the agent manages to the pod's
// fsGroup, if it has one (volume.SetOwnership).
func setFSGroup(pod *v1.Pod, dir string, readOnly bool) error {
	psc := pod.Spec.SecurityContext
	if psc == nil || psc.FSGroup == nil {
		return nil
	}
	return volume.SetOwnership(dir, *psc.FSGroup, psc.FSGroupChangePolicy, readOnly)
}

func dirExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// objectsOrErr is the manager's ConfigMap and Secret source.
func (m *Manager) objectsOrErr() (volume.Objects, error) {
	if m.opts.Objects == nil {
		return nil, fmt.Errorf("no ConfigMap and Secret source on this node")
	}
	return m.opts.Objects, nil
}

func (m *Manager) configMapPayload(pod *v1.Pod, name string, items []v1.KeyToPath, mode *int32, optional *bool) (map[string]volume.File, error) {
	return m.objectPayload("configmap", name, items, mode, optional, func(objs volume.Objects) (map[string][]byte, error) {
		cm, err := objs.ConfigMap(pod.Namespace, name)
		if err != nil {
			return nil, err
		}
		return volume.ConfigMapData(cm), nil
	})
}

func (m *Manager) secretPayload(pod *v1.Pod, name string, items []v1.KeyToPath, mode *int32, optional *bool) (map[string]volume.File, error) {
	return m.objectPayload("secret", name, items, mode, optional, func(objs volume.Objects) (map[string][]byte, error) {
		sec, err := objs.Secret(pod.Namespace, name)
		if err != nil {
			return nil, err
		}
		return sec.Data, nil
	})
}

// objectPayload is the volume payload of the ConfigMap or Secret (kind)
// name, whose data read returns; an optional one that is missing gives an
// empty payload.
func (m *Manager) objectPayload(kind, name string, items []v1.KeyToPath, mode *int32, optional *bool,
	read func(volume.Objects) (map[string][]byte, error)) (map[string]volume.File, error) {
	objs, err := m.objectsOrErr()
	if err != nil {
		return nil, err
	}
	opt := optional != nil && *optional
	data, err := read(objs)
	switch {
	case apierrors.IsNotFound(err) && opt:
		return map[string]volume.File{}, nil
	case err != nil:
		return nil, fmt.Errorf("%s %q not found", kind, name)
	}
	return volume.KeysPayload(kind, name, data, items, mode, opt)
}
