package volume

import (
	"fmt"
	"io/fs"
	"math"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// DownwardAPIPayload is the content of a downwardAPI volume (or projected
// source) for pod: one file per item, from a pod field (name, namespace,
// uid, labels, annotations, one label or annotation) or a container's
// resource (limits/requests of cpu, memory, ephemeral-storage, divided by
// divisor and rounded up). An unset limit reads as the node's allocatable.
// Mode: the item's, else defaultMode, else 0644.
func DownwardAPIPayload(pod *v1.Pod, items []v1.DownwardAPIVolumeFile, defaultMode *int32, allocatable v1.ResourceList) (map[string]File, error) {
	mode := fs.FileMode(v1.DownwardAPIVolumeSourceDefaultMode)
	if defaultMode != nil {
		mode = fs.FileMode(*defaultMode)
	}
	out := make(map[string]File, len(items))
	for i, it := range items {
		var value string
		var err error
		switch {
		case it.FieldRef != nil && it.ResourceFieldRef != nil:
			err = fmt.Errorf("only one of fieldRef and resourceFieldRef may be set")
		case it.FieldRef != nil:
			value, err = PodField(pod, it.FieldRef.FieldPath, nil)
		case it.ResourceFieldRef != nil:
			value, err = ResourceField(pod, it.ResourceFieldRef, "", allocatable)
		default:
			err = fmt.Errorf("one of fieldRef and resourceFieldRef must be set")
		}
		if err != nil {
			return nil, fmt.Errorf("items[%d] (%s): %w", i, it.Path, err)
		}
		m := mode
		if it.Mode != nil {
			m = fs.FileMode(*it.Mode)
		}
		out[it.Path] = File{Data: []byte(value), Mode: m}
	}
	return out, nil
}

// PodStatusFields are the facts of a running pod that the downward API
// gives to environment variables (not to volumes).
type PodStatusFields struct {
	HostIP string
	PodIPs []string
}

// PodField is the downward API's value of fieldPath for pod, as the
// kubelet formats it. With st nil it is the volume form: metadata only,
// where a whole map (metadata.labels, metadata.annotations) is
// `key="value"` lines in key order. With st it is the environment form:
// single values, plus spec.nodeName, spec.serviceAccountName and the
// status fields st holds.
func PodField(pod *v1.Pod, fieldPath string, st *PodStatusFields) (string, error) {
	switch fieldPath {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	}
	for prefix, src := range map[string]map[string]string{"metadata.labels": pod.Labels, "metadata.annotations": pod.Annotations} {
		if fieldPath == prefix && st == nil {
			return formatMap(src), nil
		}
		if rest, ok := strings.CutPrefix(fieldPath, prefix+"['"); ok {
			if key, ok := strings.CutSuffix(rest, "']"); ok {
				return src[key], nil
			}
		}
	}
	if st == nil {
		return "", fmt.Errorf("fieldRef.fieldPath %q: not supported in a volume (metadata.name, metadata.namespace, metadata.uid, metadata.labels, metadata.annotations, metadata.labels['KEY'], metadata.annotations['KEY'])", fieldPath)
	}
	switch fieldPath {
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP":
		return st.HostIP, nil
	case "status.podIP":
		if len(st.PodIPs) > 0 {
			return st.PodIPs[0], nil
		}
		return "", nil
	case "status.podIPs":
		return strings.Join(st.PodIPs, ","), nil
	}
	return "", fmt.Errorf("valueFrom.fieldRef.fieldPath %q: unsupported field", fieldPath)
}

func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%v=%q", k, m[k])
	}
	return b.String()
}

// ResourceField is a container's resource as the downward API gives it.
// container names the container when ref.ContainerName is empty (env).
func ResourceField(pod *v1.Pod, ref *v1.ResourceFieldSelector, container string, allocatable v1.ResourceList) (string, error) {
	name := ref.ContainerName
	if name == "" {
		name = container
	}
	var c *v1.Container
	for _, list := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				c = &list[i]
			}
		}
	}
	if c == nil {
		return "", fmt.Errorf("resourceFieldRef.containerName %q: no such container", name)
	}
	kind, res, ok := strings.Cut(ref.Resource, ".")
	rn := v1.ResourceName(res)
	if !ok || (kind != "limits" && kind != "requests") || (rn != v1.ResourceCPU && rn != v1.ResourceMemory && rn != v1.ResourceEphemeralStorage) {
		return "", fmt.Errorf("resourceFieldRef.resource %q: must be limits or requests of cpu, memory or ephemeral-storage", ref.Resource)
	}
	var q resource.Quantity
	switch kind {
	case "limits":
		if v, ok := c.Resources.Limits[rn]; ok {
			q = v
		} else if v, ok := allocatable[rn]; ok {
			q = v
		}
	case "requests":
		if v, ok := c.Resources.Requests[rn]; ok {
			q = v
		}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if rn == v1.ResourceCPU {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
}
