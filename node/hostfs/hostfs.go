// Package hostfs reads the size, free space and inodes of the host's
// filesystems: the node's capacity (ephemeral-storage), its disk pressure
// signals and image garbage collection all measure them the same way.
package hostfs

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Stats is a filesystem's size and free space in bytes (free as df shows
// it to unprivileged users), and its inodes.
type Stats struct {
	Capacity, Available, Inodes, InodesFree uint64
}

// Stat reads the Stats of the filesystem holding path (statfs).
func Stat(path string) (Stats, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return Stats{}, fmt.Errorf("statfs %s: %w", path, err)
	}
	bs := uint64(st.Bsize)
	return Stats{Capacity: st.Blocks * bs, Available: st.Bavail * bs, Inodes: st.Files, InodesFree: st.Ffree}, nil
}
