package agent

import (
	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/sources/validation"
)

// runtimeAdmission is the sync loop's admission check for the runtime
// that reports runtimeVersion ("name://version"): the process runtime
// refuses, with one message naming the fields, the containers it cannot
// start — rather than failing their start over and over. Other runtimes
// run what the API allows.
func runtimeAdmission(runtimeVersion string) func(*v1.Pod) (string, string) {
	if !validation.IsProcessRuntime(runtimeVersion) {
		return nil
	}
	return func(pod *v1.Pod) (string, string) {
		errs := validation.ProcessRuntimeErrors(&pod.Spec, validation.LookPath)
		if len(errs) == 0 {
			return "", ""
		}
		return validation.ReasonRuntimeUnsupported, "Pod cannot run on this node's process runtime: " + errs.ToAggregate().Error()
	}
}
