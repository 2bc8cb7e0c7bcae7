package kuberuntime

import (
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
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
	case s.Projected != nil:
		out := map[string]volume.File{}
		for i, src := range s.Projected.Sources {
			var part map[string]volume.File
			var err error
			switch {
			case src.DownwardAPI != nil:
				part, err = volume.DownwardAPIPayload(pod, src.DownwardAPI.Items, s.Projected.DefaultMode, m.opts.Allocatable)
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
	changed, err := volume.Write(m.projectedPath(pod, vol.Name), payload)
	if err != nil {
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

func dirExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
