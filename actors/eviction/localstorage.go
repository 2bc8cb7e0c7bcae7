package eviction

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// The kubelet's local-storage eviction messages (LocalStorageCapacityIsolation,
// pkg/kubelet/eviction/helpers.go), trailing spaces included.
const (
	emptyDirMessageFmt                  = "Usage of EmptyDir volume %q exceeds the limit %q. "
	podEphemeralStorageMessageFmt       = "Pod ephemeral local storage usage exceeds the total limit of containers %s. "
	containerEphemeralStorageMessageFmt = "Container %s exceeded its local ephemeral storage limit %q. "
)

// diskParts says which of a pod's disk usage counts for a signal (the
// kubelet's fsStatsType lists), in bytes or in inodes.
type diskParts struct {
	rootfs, logs, volumes bool
	inodes                bool
}

// allDisk is everything a pod writes to local disk.
var allDisk = diskParts{rootfs: true, logs: true, volumes: true}

// diskPartsFor is what the kubelet ranks a disk signal by: everything on a
// node whose images share the node filesystem; with a dedicated image
// filesystem, logs and volumes for nodefs and the writable layers for
// imagefs.
func diskPartsFor(sig Signal, dedicated bool) diskParts {
	parts := allDisk
	switch {
	case !dedicated:
	case sig == SignalImageFsAvailable || sig == SignalImageFsInodesFree:
		parts = diskParts{rootfs: true}
	default:
		parts = diskParts{logs: true, volumes: true}
	}
	parts.inodes = sig == SignalNodeFsInodesFree || sig == SignalImageFsInodesFree
	return parts
}

// diskUsage is the pod's usage of the parts, in bytes or inodes. Volumes
// are its local ephemeral ones: emptyDirs not in memory.
func diskUsage(pod *v1.Pod, s PodStats, parts diskParts) uint64 {
	var n uint64
	for _, c := range s.Containers {
		rootfs, logs := c.Rootfs, c.Logs
		if parts.inodes {
			rootfs, logs = c.RootfsInodes, c.LogsInodes
		}
		if parts.rootfs {
			n += rootfs
		}
		if parts.logs {
			n += logs
		}
	}
	volumes := s.Volumes
	if parts.inodes {
		volumes = s.VolumeInodes
	}
	if parts.volumes {
		for _, vol := range pod.Spec.Volumes {
			if vol.EmptyDir != nil && vol.EmptyDir.Medium != v1.StorageMediumMemory {
				n += volumes[vol.Name]
			}
		}
	}
	return n
}

// localStorageViolation is the eviction message of a pod over one of its
// local-storage limits, or "" (the kubelet's emptyDirLimitEviction,
// podEphemeralStorageLimitEviction and containerEphemeralStorageLimitEviction,
// in that order): an emptyDir above its sizeLimit; the pod's ephemeral
// storage (writable layers, logs, emptyDirs) above the sum of its
// containers' limits; a container's logs (and writable layer, when it is
// on the node filesystem) above its limit.
func localStorageViolation(pod *v1.Pod, s PodStats, dedicated bool) string {
	for _, vol := range pod.Spec.Volumes {
		if vol.EmptyDir == nil || vol.EmptyDir.SizeLimit == nil || vol.EmptyDir.SizeLimit.Sign() <= 0 {
			continue
		}
		used, ok := s.Volumes[vol.Name]
		if ok && resourceBytes(used).Cmp(*vol.EmptyDir.SizeLimit) > 0 {
			return fmt.Sprintf(emptyDirMessageFmt, vol.Name, vol.EmptyDir.SizeLimit.String())
		}
	}
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	if limit, ok := limits[v1.ResourceEphemeralStorage]; ok {
		if resourceBytes(diskUsage(pod, s, allDisk)).Cmp(limit) > 0 {
			return fmt.Sprintf(podEphemeralStorageMessageFmt, limit.String())
		}
	}
	for _, c := range pod.Spec.Containers {
		limit := c.Resources.Limits.StorageEphemeral()
		if limit == nil || limit.IsZero() {
			continue
		}
		for _, cs := range s.Containers {
			if cs.Name != c.Name {
				continue
			}
			used := cs.Logs
			if !dedicated {
				used += cs.Rootfs
			}
			if resourceBytes(used).Cmp(*limit) > 0 {
				return fmt.Sprintf(containerEphemeralStorageMessageFmt, c.Name, limit.String())
			}
		}
	}
	return ""
}

// ephemeralQuantity is a container's ephemeral-storage use as the
// eviction message names it (writable layer and logs).
func ephemeralQuantity(c ContainerStats) *resource.Quantity {
	return resourceBytes(c.Rootfs + c.Logs)
}
