package procruntime

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const (
	// RuntimeName is what Version reports.
	RuntimeName = "actorlet-process"
	// RuntimeVersion is this runtime's version.
	RuntimeVersion = "0.1.0"
	apiVersion     = "v1"
	// kubeAPIVersion is the kubelet runtime API version CRI expects here.
	kubeAPIVersion = "0.1.0"
)

// Version names the runtime and its API version.
func (r *Runtime) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{
		Version:           kubeAPIVersion,
		RuntimeName:       RuntimeName,
		RuntimeVersion:    RuntimeVersion,
		RuntimeApiVersion: apiVersion,
	}, nil
}

// Status reports the runtime and its (host) network ready.
func (r *Runtime) Status(_ context.Context, req *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	resp := &runtimeapi.StatusResponse{
		Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
			{Type: runtimeapi.RuntimeReady, Status: true},
			{Type: runtimeapi.NetworkReady, Status: true},
		}},
	}
	resp.RuntimeHandlers = []*runtimeapi.RuntimeHandler{{
		Name: defaultHandler,
		// Filesystem views honour recursive_read_only (rootfs.go).
		Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: r.iso.mode.Filesystem},
	}}
	resp.Features = &runtimeapi.RuntimeFeatures{}
	if req.GetVerbose() {
		resp.Info = map[string]string{
			"rootDir":       r.opts.RootDir,
			"hostIP":        r.opts.HostIP,
			"streamAddress": r.StreamAddress(),
			"isolation":     r.iso.mode.String(),
			"unsupported":   strings.Join(UnsupportedRPCs, ","),
		}
	}
	return resp, nil
}

// defaultHandler is the only runtime handler (RuntimeClass) served.
const defaultHandler = ""

func knownHandler(h string) bool { return h == defaultHandler }

// RuntimeConfig reports the cgroup driver: cgroupfs (the runtime writes
// cgroup directories itself when it isolates, see isolation.go).
func (r *Runtime) RuntimeConfig(context.Context, *runtimeapi.RuntimeConfigRequest) (*runtimeapi.RuntimeConfigResponse, error) {
	return &runtimeapi.RuntimeConfigResponse{
		Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: runtimeapi.CgroupDriver_CGROUPFS},
	}, nil
}

// UpdateRuntimeConfig accepts the pod CIDR the kubelet sends; with no
// network of its own the runtime has nothing to configure.
func (r *Runtime) UpdateRuntimeConfig(context.Context, *runtimeapi.UpdateRuntimeConfigRequest) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
}

// ImageFsInfo reports what the image records (images/) and the container
// state (containers/) use on disk, measured by walking them.
func (r *Runtime) ImageFsInfo(context.Context, *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	now := time.Now().UnixNano()
	usage := func(dir string) *runtimeapi.FilesystemUsage {
		bytes, inodes := diskUsage(dir)
		return &runtimeapi.FilesystemUsage{
			Timestamp:  now,
			FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: dir},
			UsedBytes:  &runtimeapi.UInt64Value{Value: bytes},
			InodesUsed: &runtimeapi.UInt64Value{Value: inodes},
		}
	}
	return &runtimeapi.ImageFsInfoResponse{
		ImageFilesystems:     []*runtimeapi.FilesystemUsage{usage(filepath.Join(r.opts.RootDir, imagesDir))},
		ContainerFilesystems: []*runtimeapi.FilesystemUsage{usage(filepath.Join(r.opts.RootDir, containersDir))},
	}, nil
}

// maxDiskUsageEntries bounds the walk of one directory.
const maxDiskUsageEntries = 1 << 20

// diskUsage sums the allocated bytes and counts the inodes under dir.
func diskUsage(dir string) (bytes, inodes uint64) {
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		inodes++
		if inodes > maxDiskUsageEntries {
			return filepath.SkipAll
		}
		if fi, err := d.Info(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				bytes += uint64(st.Blocks) * 512
			} else {
				bytes += uint64(fi.Size())
			}
		}
		return nil
	})
	return bytes, inodes
}
