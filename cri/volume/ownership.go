package volume

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	v1 "k8s.io/api/core/v1"
)

// Permission bits SetOwnership adds, as the kubelet's SetVolumeOwnership.
const (
	rwMask   fs.FileMode = 0o660
	roMask   fs.FileMode = 0o440
	execMask fs.FileMode = 0o110
)

// ReadOnlyGroupBits are the bits SetOwnership adds to a read-only
// volume's files: an atomically written payload carries them, so that a
// volume written again with the same content compares unchanged.
const ReadOnlyGroupBits = roMask

// MaxOwnershipEntries bounds the files and directories SetOwnership walks
// in one volume: a pod filling its emptyDir with millions of files must not
// hold every container start of the pod on a walk of them all.
const MaxOwnershipEntries = 100000

// maxOwnershipEntries is MaxOwnershipEntries, lowered by tests.
var maxOwnershipEntries = MaxOwnershipEntries

// SetOwnership gives what is under dir to the pod's fsGroup, as the
// kubelet's SetVolumeOwnership does: every entry group-owned by fsGroup
// (a symlink itself, never followed), readable and writable by the group
// (readable only for a read-only volume), directories setgid and
// group-searchable so that what containers create inherits the group.
// With fsGroupChangePolicy OnRootMismatch nothing is walked when dir
// already has the group and the permissions. More than
// MaxOwnershipEntries entries is an error naming the limit.
func SetOwnership(dir string, fsGroup int64, policy *v1.PodFSGroupChangePolicy, readOnly bool) error {
	mask := rwMask
	if readOnly {
		mask = roMask
	}
	if policy != nil && *policy == v1.FSGroupChangeOnRootMismatch && rootMatches(dir, fsGroup, mask) {
		return nil
	}
	entries := 0
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("fsGroup %d: %w", fsGroup, err)
		}
		if entries++; entries > maxOwnershipEntries {
			return fmt.Errorf("fsGroup %d: volume %s has more than %d files and directories (MaxOwnershipEntries): set fsGroupChangePolicy: OnRootMismatch", fsGroup, dir, maxOwnershipEntries)
		}
		if err := os.Lchown(p, -1, int(fsGroup)); err != nil {
			return fmt.Errorf("fsGroup %d: set the group of %s: %w", fsGroup, p, err)
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return fmt.Errorf("fsGroup %d: %w", fsGroup, err)
		}
		m := mask
		if d.IsDir() {
			m |= fs.ModeSetgid | execMask
		}
		if err := os.Chmod(p, info.Mode()|m); err != nil {
			return fmt.Errorf("fsGroup %d: set the mode of %s: %w", fsGroup, p, err)
		}
		return nil
	})
}

// rootMatches: dir is group-owned by fsGroup, setgid, with the mask's bits.
func rootMatches(dir string, fsGroup int64, mask fs.FileMode) bool {
	info, err := os.Stat(dir)
	if err != nil {
		return false
	}
	gid, ok := fileGID(info)
	want := mask | execMask
	return ok && gid == fsGroup && info.Mode()&fs.ModeSetgid != 0 && info.Mode().Perm()&want == want
}

func fileGID(info fs.FileInfo) (int64, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int64(st.Gid), true
}
