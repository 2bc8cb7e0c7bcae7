package volume

import (
	"fmt"
	"io/fs"
	"sort"

	v1 "k8s.io/api/core/v1"
)

// Objects gives the ConfigMaps and Secrets pods reference. A missing one
// is an error for which apierrors.IsNotFound holds.
type Objects interface {
	ConfigMap(namespace, name string) (*v1.ConfigMap, error)
	Secret(namespace, name string) (*v1.Secret, error)
}

// KeysPayload projects keys → data into files, as the kubelet's configMap
// and secret volumes: every key as a file of its name, or with items only
// the listed keys at their paths (a listed key that is missing is an
// error unless optional). Mode: the item's, else defaultMode, else 0644.
func KeysPayload(kind, name string, data map[string][]byte, items []v1.KeyToPath, defaultMode *int32, optional bool) (map[string]File, error) {
	mode := fs.FileMode(0o644)
	if defaultMode != nil {
		mode = fs.FileMode(*defaultMode)
	}
	out := map[string]File{}
	if len(items) == 0 {
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out[k] = File{Data: data[k], Mode: mode}
		}
		return out, nil
	}
	for i, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("items[%d]: %s %q has no key %q", i, kind, name, it.Key)
		}
		m := mode
		if it.Mode != nil {
			m = fs.FileMode(*it.Mode)
		}
		out[it.Path] = File{Data: v, Mode: m}
	}
	return out, nil
}

// ConfigMapData is a ConfigMap's data and binaryData as bytes.
func ConfigMapData(cm *v1.ConfigMap) map[string][]byte {
	out := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		out[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		out[k] = v
	}
	return out
}
