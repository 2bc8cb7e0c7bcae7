package file

import (
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// validatePod is the minimum a static pod must satisfy to be run.
// TODO: switch to validation.ValidatePod once sources/validation has it.
func validatePod(pod *v1.Pod) error {
	var errs []error
	for _, msg := range validation.IsDNS1123Subdomain(pod.Name) {
		errs = append(errs, fmt.Errorf("metadata.name %q: %s", pod.Name, msg))
	}
	for _, msg := range validation.IsDNS1123Label(pod.Namespace) {
		errs = append(errs, fmt.Errorf("metadata.namespace %q: %s", pod.Namespace, msg))
	}
	if len(pod.Spec.Containers) == 0 {
		errs = append(errs, errors.New("spec.containers: at least one container is required"))
	}
	seen := map[string]bool{}
	check := func(path string, cs []v1.Container) {
		for i, c := range cs {
			p := fmt.Sprintf("%s[%d]", path, i)
			if c.Name == "" {
				errs = append(errs, fmt.Errorf("%s.name: required", p))
			} else if seen[c.Name] {
				errs = append(errs, fmt.Errorf("%s.name %q: duplicate container name", p, c.Name))
			}
			seen[c.Name] = true
			if c.Image == "" {
				errs = append(errs, fmt.Errorf("%s.image: required", p))
			}
		}
	}
	check("spec.initContainers", pod.Spec.InitContainers)
	check("spec.containers", pod.Spec.Containers)
	return errors.Join(errs...)
}
