package validation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// quantityErrors finds the resource quantities of a pod's raw JSON that do
// not parse, each with its field path. Decoding into a v1.Pod stops at the
// first bad quantity with an error that names neither the field nor the
// value ("quantities must match the regular expression …"); this walk
// tells the operator which one it was.
func quantityErrors(raw []byte) field.ErrorList {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var pod map[string]any
	if err := dec.Decode(&pod); err != nil {
		return nil
	}
	spec, _ := pod["spec"].(map[string]any)
	if spec == nil {
		return nil
	}
	sp := field.NewPath("spec")
	var errs field.ErrorList
	for _, kind := range []string{"initContainers", "containers", "ephemeralContainers"} {
		list, _ := spec[kind].([]any)
		for i, c := range list {
			c, _ := c.(map[string]any)
			errs = append(errs, requirementsErrors(c["resources"], sp.Child(kind).Index(i).Child("resources"))...)
		}
	}
	errs = append(errs, requirementsErrors(spec["resources"], sp.Child("resources"))...)
	errs = append(errs, listErrors(spec["overhead"], sp.Child("overhead"))...)
	volumes, _ := spec["volumes"].([]any)
	for i, v := range volumes {
		v, _ := v.(map[string]any)
		if ed, ok := v["emptyDir"].(map[string]any); ok {
			if q, ok := ed["sizeLimit"]; ok {
				errs = append(errs, quantityError(q, sp.Child("volumes").Index(i).Child("emptyDir", "sizeLimit"))...)
			}
		}
	}
	return errs
}

// requirementsErrors checks the limits and requests of a resources object.
func requirementsErrors(v any, path *field.Path) field.ErrorList {
	r, _ := v.(map[string]any)
	if r == nil {
		return nil
	}
	return append(listErrors(r["limits"], path.Child("limits")), listErrors(r["requests"], path.Child("requests"))...)
}

// listErrors checks every quantity of a resource list, in name order.
func listErrors(v any, path *field.Path) field.ErrorList {
	l, _ := v.(map[string]any)
	names := make([]string, 0, len(l))
	for n := range l {
		names = append(names, n)
	}
	sort.Strings(names)
	var errs field.ErrorList
	for _, n := range names {
		errs = append(errs, quantityError(l[n], path.Key(n))...)
	}
	return errs
}

func quantityError(v any, path *field.Path) field.ErrorList {
	var s string
	switch q := v.(type) {
	case string:
		s = q
	case json.Number:
		s = q.String()
	case nil:
		return nil
	default:
		return field.ErrorList{field.Invalid(path, fmt.Sprint(v), "must be a quantity such as 500m, 2 or 1Gi")}
	}
	if _, err := resource.ParseQuantity(s); err != nil {
		return field.ErrorList{field.Invalid(path, s, "must be a quantity such as 500m, 2 or 1Gi: "+err.Error())}
	}
	return nil
}
