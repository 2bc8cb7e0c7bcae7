package validation

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	yamlv3 "go.yaml.in/yaml/v3"
	v1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// ErrEmpty is returned for a payload with nothing in it.
var ErrEmpty = errors.New("payload is empty")

// DecodePod parses a Pod from JSON or YAML. apiVersion must be "v1" and kind
// "Pod"; when both are empty they are filled in. Unknown fields are rejected
// so that a misspelt field ("contianers") is reported, not ignored.
func DecodePod(data []byte) (*v1.Pod, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, ErrEmpty
	}
	if err := CheckPodBytes(len(data)); err != nil {
		return nil, err
	}
	raw, err := toJSON(data)
	if err != nil {
		return nil, fmt.Errorf("payload is not JSON or YAML: %w", err)
	}
	var meta struct {
		APIVersion *string `json:"apiVersion"`
		Kind       *string `json:"kind"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		return nil, fmt.Errorf("payload is not a JSON or YAML object: %w", err)
	}
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, ErrEmpty
	}
	if meta.Kind != nil && *meta.Kind != "" && *meta.Kind != "Pod" {
		return nil, fmt.Errorf("kind is %q, want Pod", *meta.Kind)
	}
	if meta.APIVersion != nil && *meta.APIVersion != "" && *meta.APIVersion != "v1" {
		return nil, fmt.Errorf("apiVersion is %q, want v1", *meta.APIVersion)
	}

	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	pod := &v1.Pod{}
	if err := dec.Decode(pod); err != nil {
		if errs := quantityErrors(raw); len(errs) > 0 {
			return nil, fmt.Errorf("decode pod: %w", errs.ToAggregate())
		}
		return nil, fmt.Errorf("decode pod: %w", err)
	}
	pod.APIVersion, pod.Kind = "v1", "Pod"
	return pod, nil
}

// toJSON returns data as JSON. A payload that opens with a JSON value
// must be that one value alone (YAML parsers would silently drop trailing
// garbage); anything else — flow-style YAML (`{apiVersion: v1, ...}`)
// included — is read as exactly one YAML document.
func toJSON(data []byte) ([]byte, error) {
	trimmed := bytes.TrimSpace(data)
	if trimmed[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		var v json.RawMessage
		err := dec.Decode(&v)
		var syntax *json.SyntaxError
		switch {
		case err == nil:
			if len(bytes.TrimSpace(trimmed[dec.InputOffset():])) > 0 {
				return nil, errors.New("invalid JSON: trailing data after the first value")
			}
			return trimmed, nil
		case !errors.As(err, &syntax):
			return nil, fmt.Errorf("invalid JSON: %w", err)
		}
		// Not JSON: flow-style YAML, which must be one document alone
		// (the YAML-to-JSON conversion below would drop what follows it).
		if err := oneYAMLNode(trimmed); err != nil {
			return nil, err
		}
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) > 0 && !bytes.Equal(bytes.TrimSpace(doc), []byte("---")) {
			docs = append(docs, doc)
		}
	}
	if len(docs) != 1 {
		return nil, fmt.Errorf("want exactly one YAML document, found %d", len(docs))
	}
	return yaml.YAMLToJSON(docs[0])
}

// oneYAMLNode fails unless data holds exactly one YAML node.
func oneYAMLNode(data []byte) error {
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	var n yamlv3.Node
	if err := dec.Decode(&n); err != nil {
		return fmt.Errorf("invalid YAML: %w", err)
	}
	if err := dec.Decode(&n); !errors.Is(err, io.EOF) {
		return fmt.Errorf("invalid YAML: trailing data after the first value: %v", err)
	}
	return nil
}
