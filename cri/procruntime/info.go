package procruntime

import (
	"context"

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
	if req.GetVerbose() {
		resp.Info = map[string]string{"rootDir": r.opts.RootDir, "hostIP": r.opts.HostIP}
	}
	return resp, nil
}
