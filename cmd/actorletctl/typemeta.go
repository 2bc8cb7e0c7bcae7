package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// maxTypeMetaBytes bounds the documents typeMetaError converts: a larger
// one is over every object's limit and is refused by its decoder.
const maxTypeMetaBytes = 4 << 20

// typeMetaError refuses a manifest without apiVersion or kind, as kubectl
// does ("error validating data: apiVersion not set"): the API server needs
// both to know what the object is, and a manifest that lacks them would be
// refused by a cluster. Empty documents and ones that are not objects are
// left to the decoders, which explain those.
func typeMetaError(data []byte) error {
	if len(data) > maxTypeMetaBytes || len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	raw, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(raw, &meta) != nil || meta == nil {
		return nil
	}
	var missing []string
	for _, f := range []struct{ field, hint string }{
		{"apiVersion", "apiVersion: v1"},
		{"kind", "kind: Pod, ConfigMap or Secret"},
	} {
		var v string
		if json.Unmarshal(meta[f.field], &v) != nil || strings.TrimSpace(v) == "" {
			missing = append(missing, fmt.Sprintf("%s not set (add %s)", f.field, f.hint))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("error validating data: %s", strings.Join(missing, "; "))
}
