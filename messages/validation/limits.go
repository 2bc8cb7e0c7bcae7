package validation

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Limits on what a pod source accepts, each reported with the limit's name.
const (
	// MaxPodBytes bounds a pod's encoded size (JSON or YAML), as etcd's
	// 1.5 MiB request limit bounds a Pod stored by the API server.
	MaxPodBytes = 1536 << 10
	// MaxContainersPerPod bounds init, regular and ephemeral containers
	// together. Each container costs a process (and, on the process
	// runtime, a shim) and its share of the pod's status; the API server
	// has no such limit but its object size, which allows thousands.
	MaxContainersPerPod = 100
)

// maxEchoedValue bounds a rejected value quoted back in an error: a 1 MB
// name must not become a 1 MB error message, status and event.
const maxEchoedValue = 256

// shortenValues cuts the long string values errs quote.
func shortenValues(errs field.ErrorList) field.ErrorList {
	for _, e := range errs {
		if s, ok := e.BadValue.(string); ok && len(s) > maxEchoedValue {
			e.BadValue = fmt.Sprintf("%s...(%d bytes)", s[:maxEchoedValue], len(s))
		}
	}
	return errs
}

// CheckPodBytes rejects a payload over MaxPodBytes before it is parsed.
func CheckPodBytes(n int) error {
	if n > MaxPodBytes {
		return fmt.Errorf("pod is %d bytes, over the %d-byte limit (MaxPodBytes)", n, MaxPodBytes)
	}
	return nil
}

// validateLimits checks the pod's counts and the metadata the API server
// bounds: labels (syntax) and annotations (syntax, 256 KiB in total).
func validateLimits(pod *v1.Pod) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if n := len(pod.Spec.InitContainers) + len(pod.Spec.Containers) + len(pod.Spec.EphemeralContainers); n > MaxContainersPerPod {
		errs = append(errs, field.Forbidden(spec.Child("containers"),
			fmt.Sprintf("%d containers (init, regular and ephemeral together): at most %d per pod (MaxContainersPerPod)", n, MaxContainersPerPod)))
	}
	meta := field.NewPath("metadata")
	errs = append(errs, metav1validation.ValidateLabels(pod.Labels, meta.Child("labels"))...)
	errs = append(errs, apivalidation.ValidateAnnotations(pod.Annotations, meta.Child("annotations"))...)
	return errs
}
