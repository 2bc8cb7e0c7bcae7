package procruntime

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// LiveContainer is a container whose shim is alive in a runtime's root
// directory: found from the state on disk, with no runtime running.
type LiveContainer struct {
	ID        string
	Namespace string // the pod's, from the CRI labels the kubelet sets
	Pod       string
	Name      string // the container's
	ShimPID   int
}

// maxLiveScan bounds how many container directories LiveContainers looks
// at: a root directory holds one per container ever created and not yet
// removed.
const maxLiveScan = 100000

// LiveContainers lists the containers of the runtime state in rootDir
// whose shim is alive (it holds its shim.lock: the same test the runtime
// uses to adopt them), sorted by pod and container. It is how a tool
// finds out, without a runtime, that pods of that directory still run
// (make clean refuses to remove their state). A missing directory has
// none.
func LiveContainers(rootDir string) ([]LiveContainer, error) {
	entries, err := os.ReadDir(filepath.Join(rootDir, containersDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the containers of %s: %w", rootDir, err)
	}
	if len(entries) > maxLiveScan {
		return nil, fmt.Errorf("%s holds %d container directories, over the %d looked at", rootDir, len(entries), maxLiveScan)
	}
	var out []LiveContainer
	for _, e := range entries {
		dir := filepath.Join(rootDir, containersDir, e.Name())
		alive, err := shimAlive(dir)
		if err != nil {
			return nil, fmt.Errorf("container %s: %w", e.Name(), err)
		}
		if !alive {
			continue
		}
		lc := LiveContainer{ID: e.Name()}
		var rec containerRecord
		if readJSON(filepath.Join(dir, "record.json"), &rec) == nil {
			lc.ShimPID = rec.Shim.PID
		}
		cfg := &runtimeapi.ContainerConfig{}
		if readProto(filepath.Join(dir, "config.json"), cfg) == nil {
			lc.Namespace = cfg.GetLabels()["io.kubernetes.pod.namespace"]
			lc.Pod = cfg.GetLabels()["io.kubernetes.pod.name"]
			lc.Name = cfg.GetMetadata().GetName()
		}
		out = append(out, lc)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Namespace+"/"+a.Pod != b.Namespace+"/"+b.Pod {
			return a.Namespace+"/"+a.Pod < b.Namespace+"/"+b.Pod
		}
		return a.Name < b.Name
	})
	return out, nil
}

// Serving reports whether a runtime answers on the unix socket path: a
// node (or `actorlet runtime`) is running on that root directory.
func Serving(socket string) bool {
	c, err := net.DialTimeout("unix", socket, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
