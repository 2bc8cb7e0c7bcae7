package kuberuntime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Modes of what the agent creates under <PodsDir>, set explicitly so the
// umask cannot widen them (under umask 0000 a MkdirAll(0o777) is
// world-writable).
const (
	// podDirMode: <PodsDir>, <PodsDir>/<uid> and every directory between
	// it and a volume or a termination-message file: the agent's user
	// only, as the kubelet keeps /var/lib/kubelet/pods (0750, root). No
	// other local user can list, traverse or read anything below, so a
	// Secret volume's files (at their defaultMode) are never reachable
	// through a world-readable path.
	podDirMode fs.FileMode = 0o750
	// sharedDirMode and sharedFileMode are an emptyDir and a termination
	// message file when the user the containers run as is not known (a
	// container without runAsUser runs as its image's user): any container
	// user can write them, as the kubelet makes them (0777, 0666). They are
	// reachable only through podDirMode directories.
	sharedDirMode  fs.FileMode = 0o777
	sharedFileMode fs.FileMode = 0o666
	// ownedDirMode and ownedFileMode are the same when the spec says which
	// user every container that uses them runs as: owned by that user,
	// nobody else may write.
	ownedDirMode  fs.FileMode = 0o750
	ownedFileMode fs.FileMode = 0o640
)

// ensurePodDir creates <PodsDir>/<uid>/<parts...> and every directory on
// the way from <PodsDir> with podDirMode, whatever the umask, and returns
// its path. Directories that exist get that mode too (an older agent made
// them 0755).
func (m *Manager) ensurePodDir(pod *v1.Pod, parts ...string) (string, error) {
	dir := m.opts.PodsDir
	for _, p := range append([]string{string(pod.UID)}, parts...) {
		if err := mkdirMode(dir, podDirMode); err != nil {
			return "", err
		}
		dir = filepath.Join(dir, p)
	}
	if err := mkdirMode(dir, podDirMode); err != nil {
		return "", err
	}
	return dir, nil
}

// mkdirMode creates dir (its parent must exist, except for a missing
// PodsDir, created with its parents) and sets mode on it.
func mkdirMode(dir string, mode fs.FileMode) error {
	err := os.Mkdir(dir, mode)
	if errors.Is(err, fs.ErrNotExist) {
		err = os.MkdirAll(dir, mode)
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return nil
}

// runAsUser is the user c runs as when its spec or the pod's says
// (container first), ok false when it runs as its image's user.
func runAsUser(pod *v1.Pod, c *v1.Container) (int64, bool) {
	if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
		return *c.SecurityContext.RunAsUser, true
	}
	if pod.Spec.SecurityContext != nil && pod.Spec.SecurityContext.RunAsUser != nil {
		return *pod.Spec.SecurityContext.RunAsUser, true
	}
	return 0, false
}

// volumeUser is the one user every container of the pod that mounts the
// volume runs as, ok false when they differ or one is not known.
func volumeUser(pod *v1.Pod, volume string) (int64, bool) {
	var uid int64
	found := false
	for _, c := range allContainers(pod) {
		mounts := false
		for _, vm := range c.VolumeMounts {
			mounts = mounts || vm.Name == volume
		}
		if !mounts {
			continue
		}
		u, ok := runAsUser(pod, c)
		if !ok || (found && u != uid) {
			return 0, false
		}
		uid, found = u, true
	}
	return uid, found
}

// allContainers lists the pod's init, regular and ephemeral containers.
func allContainers(pod *v1.Pod) []*v1.Container {
	var out []*v1.Container
	for i := range pod.Spec.InitContainers {
		out = append(out, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	for i := range pod.Spec.EphemeralContainers {
		out = append(out, ephemeralContainer(&pod.Spec.EphemeralContainers[i]))
	}
	return out
}

// mkdirInside creates the directories of rel (a local path) below base
// that do not exist, each owned and moded as an emptyDir (setOwnerMode),
// whatever the umask. It refuses to go through anything but a directory:
// a container could have put a symlink there to make the agent create
// directories elsewhere.
func mkdirInside(base, rel string, uid int64, known bool) error {
	dir := base
	for _, part := range strings.Split(filepath.Clean(rel), string(filepath.Separator)) {
		dir = filepath.Join(dir, part)
		fi, err := os.Lstat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(dir, 0o700); err != nil {
				return err
			}
			if _, err := setOwnerMode(dir, uid, known, ownedDirMode, sharedDirMode); err != nil {
				return err
			}
		case err != nil:
			return err
		case !fi.IsDir():
			return fmt.Errorf("%s is not a directory (%v)", dir, fi.Mode().Type())
		}
	}
	return nil
}

// setOwnerMode gives path to uid with owned when the user is known and can
// be given it (this process is root or is that user), else leaves it
// writable by every user with shared (it is reachable only through
// podDirMode directories). It returns the mode set.
func setOwnerMode(path string, uid int64, known bool, owned, shared fs.FileMode) (fs.FileMode, error) {
	mode := shared
	if known && uid >= 0 && uid <= 1<<31 {
		if int(uid) == os.Geteuid() || os.Chown(path, int(uid), -1) == nil {
			mode = owned
		}
	}
	if err := os.Chmod(path, mode); err != nil {
		return 0, fmt.Errorf("chmod %s: %w", path, err)
	}
	return mode, nil
}
