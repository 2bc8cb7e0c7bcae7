package kuberuntime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"golang.org/x/sys/unix"
)

// emptyDir volumes with medium Memory are a tmpfs mounted on the host at
// the volume's directory, as the kubelet's emptyDir plugin mounts them: the
// runtime binds that directory into the containers (containerd; the process
// runtime's views copy the mount table when the sandbox starts, so the
// mount is made before the sandbox). Its size is the volume's sizeLimit
// (tmpfs' default, half the node's memory, without one). The mount goes
// with the pod (CleanupPod). Mounting needs root.

// setupMemoryVolumes mounts the pod's medium Memory emptyDirs that are not
// mounted yet.
func (m *Manager) setupMemoryVolumes(pod *v1.Pod) error {
	if m.opts.PodsDir == "" {
		return nil
	}
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if vol.EmptyDir == nil || vol.EmptyDir.Medium != v1.StorageMediumMemory {
			continue
		}
		if err := m.mountMemoryVolume(pod, vol); err != nil {
			return err
		}
	}
	return nil
}

// mountMemoryVolume mounts vol's tmpfs unless it is mounted.
func (m *Manager) mountMemoryVolume(pod *v1.Pod, vol *v1.Volume) error {
	if _, err := m.ensurePodDir(pod, "volumes", "emptydir"); err != nil {
		return fmt.Errorf("emptyDir volume %q: create: %w", vol.Name, err)
	}
	dir := m.emptyDirPath(pod, vol.Name)
	if err := os.Mkdir(dir, sharedDirMode); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("emptyDir volume %q: create: %w", vol.Name, err)
	}
	if mounted, err := isMountPoint(dir); err != nil || mounted {
		return err
	}
	opts := "mode=0777"
	if q := vol.EmptyDir.SizeLimit; q != nil && q.Value() > 0 {
		opts += ",size=" + strconv.FormatInt(q.Value(), 10)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("emptyDir volume %q: medium Memory: mount a tmpfs on %s (needs root): %w", vol.Name, dir, err)
	}
	klog.V(2).InfoS("Mounted a memory emptyDir", "pod", klog.KObj(pod), "volume", vol.Name, "options", opts)
	return nil
}

// isMountPoint reports whether dir is mounted on (its device differs from
// its parent's).
func isMountPoint(dir string) (bool, error) {
	var st, parent unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return false, err
	}
	if err := unix.Lstat(filepath.Dir(dir), &parent); err != nil {
		return false, err
	}
	return st.Dev != parent.Dev, nil
}

// unmountMemoryVolumes unmounts what is mounted on the pod's emptyDir
// directories (dir is <PodsDir>/<uid>/volumes/emptydir).
func unmountMemoryVolumes(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if mounted, err := isMountPoint(p); err != nil || !mounted {
			continue
		}
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil {
			errs = append(errs, fmt.Errorf("unmount emptyDir %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}
