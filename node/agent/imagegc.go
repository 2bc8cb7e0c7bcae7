package agent

import (
	"context"
	"encoding/json"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/cri/imagegc"
)

// startImageGC makes the image garbage collector the supervisor runs
// periodically, or returns nil when the runtime cannot report its image
// filesystem (the in-memory runtime of tests) or the policy turns it off.
func (a *Agent) startImageGC(ctx context.Context) (*imagegc.Manager, error) {
	p := a.cfg.ImageGCPolicy()
	rt, ok := a.runtime.(imagegc.Runtime)
	if !ok {
		klog.InfoS("Image garbage collection off: the runtime does not report its image filesystem")
		return nil, nil
	}
	if p.HighThresholdPercent >= 100 && p.MaxAge == 0 {
		klog.InfoS("Image garbage collection off: image-gc-high-threshold is 100 and image-maximum-gc-age 0")
		return nil, nil
	}
	sandboxImage := a.cfg.PodInfraContainerImage
	if sandboxImage == "" {
		sandboxImage = a.runtimeSandboxImage(ctx)
	}
	var pinned []string
	if sandboxImage != "" {
		pinned = append(pinned, sandboxImage)
	}
	m, err := imagegc.New(rt, imagegc.Options{Policy: p, Pinned: pinned})
	if err != nil {
		return nil, err
	}
	klog.InfoS("Image garbage collection on", "highThreshold", p.HighThresholdPercent, "lowThreshold", p.LowThresholdPercent,
		"minimumAge", p.MinAge, "maximumAge", p.MaxAge, "period", a.cfg.ImageGCPeriod, "sandboxImage", sandboxImage)
	return m, nil
}

// runtimeStatus is a runtime that answers CRI Status.
type runtimeStatus interface {
	Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error)
}

// maxRuntimeConfigInfo bounds the runtime's configuration read from its
// verbose status.
const maxRuntimeConfigInfo = 1 << 20

// runtimeSandboxImage is the sandbox image the runtime's configuration
// names, from its verbose CRI status (containerd 1.6 and 1.7:
// info.config.sandboxImage), or "" when it names none: containerd 2.x
// pins its sandbox image itself, and the process runtime has none.
func (a *Agent) runtimeSandboxImage(ctx context.Context) string {
	rs, ok := a.runtime.(runtimeStatus)
	if !ok {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := rs.Status(ctx, true)
	if err != nil {
		klog.InfoS("Runtime status unreadable: its sandbox image is protected from image GC only if the runtime pins it (--pod-infra-container-image names it)", "err", err)
		return ""
	}
	return sandboxImageOf(st.GetInfo()["config"])
}

// sandboxImageOf reads sandboxImage from a runtime's configuration JSON;
// "" when absent or unreadable.
func sandboxImageOf(config string) string {
	if config == "" || len(config) > maxRuntimeConfigInfo {
		return ""
	}
	var c struct {
		SandboxImage string `json:"sandboxImage"`
	}
	if err := json.Unmarshal([]byte(config), &c); err != nil {
		return ""
	}
	return c.SandboxImage
}
