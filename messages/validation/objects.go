package validation

import (
	"bytes"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MaxObjectDataSize is the API server's limit on a ConfigMap's or Secret's
// data (all keys and values together): 1 MiB.
const MaxObjectDataSize = 1 << 20

// Kind reads the kind of a JSON or YAML object ("" when not set).
func Kind(data []byte) (string, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return "", ErrEmpty
	}
	raw, err := toJSON(data)
	if err != nil {
		return "", fmt.Errorf("payload is not JSON or YAML: %w", err)
	}
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return "", ErrEmpty
	}
	var meta struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		return "", fmt.Errorf("payload is not a JSON or YAML object: %w", err)
	}
	return meta.Kind, nil
}

// decodeStrict decodes data (JSON or YAML) into out, rejecting unknown
// fields, after checking apiVersion v1 and kind.
func decodeStrict(data []byte, kind string, out any) error {
	raw, err := toJSON(data)
	if err != nil {
		return fmt.Errorf("payload is not JSON or YAML: %w", err)
	}
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		return fmt.Errorf("payload is not a JSON or YAML object: %w", err)
	}
	if meta.Kind != kind {
		return fmt.Errorf("kind is %q, want %s", meta.Kind, kind)
	}
	if meta.APIVersion != "" && meta.APIVersion != "v1" {
		return fmt.Errorf("apiVersion is %q, want v1", meta.APIVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("decode %s: %w", kind, err)
	}
	return nil
}

// decodeObject decodes a ConfigMap or Secret strictly, sets its apiVersion
// (v1) and kind, and defaults its namespace to "default".
func decodeObject(data []byte, kind string, obj interface {
	GetObjectKind() schema.ObjectKind
	GetNamespace() string
	SetNamespace(string)
}) error {
	if err := decodeStrict(data, kind, obj); err != nil {
		return err
	}
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: kind})
	if obj.GetNamespace() == "" {
		obj.SetNamespace("default")
	}
	return nil
}

// DecodeConfigMap parses, defaults (namespace "default") and validates a
// ConfigMap.
func DecodeConfigMap(data []byte) (*v1.ConfigMap, error) {
	cm := &v1.ConfigMap{}
	if err := decodeObject(data, "ConfigMap", cm); err != nil {
		return nil, err
	}
	if err := ValidateConfigMap(cm); err != nil {
		return nil, err
	}
	return cm, nil
}

// DecodeSecret parses, defaults (namespace "default", type Opaque,
// stringData merged into data as the API server does) and validates a
// Secret.
func DecodeSecret(data []byte) (*v1.Secret, error) {
	s := &v1.Secret{}
	if err := decodeObject(data, "Secret", s); err != nil {
		return nil, err
	}
	if s.Type == "" {
		s.Type = v1.SecretTypeOpaque
	}
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
		s.StringData = nil
	}
	if err := ValidateSecret(s); err != nil {
		return nil, err
	}
	return s, nil
}

// ValidateConfigMap checks a ConfigMap as the API server does: a DNS-1123
// subdomain name, a DNS label namespace, valid keys not repeated between
// data and binaryData, at most 1 MiB of data.
func ValidateConfigMap(cm *v1.ConfigMap) error {
	errs := validateObjectMeta(cm.Name, cm.Namespace)
	size := 0
	for k, v := range cm.Data {
		errs = append(errs, validateKey(field.NewPath("data").Key(k), k)...)
		size += len(k) + len(v)
	}
	for k, v := range cm.BinaryData {
		p := field.NewPath("binaryData").Key(k)
		errs = append(errs, validateKey(p, k)...)
		if _, dup := cm.Data[k]; dup {
			errs = append(errs, field.Invalid(p, k, "duplicate of key present in data"))
		}
		size += len(k) + len(v)
	}
	if size > MaxObjectDataSize {
		errs = append(errs, field.TooLong(field.NewPath(""), "", MaxObjectDataSize))
		errs[len(errs)-1].Detail = fmt.Sprintf("ConfigMap data is %d bytes, over the limit of %d bytes (1 MiB)", size, MaxObjectDataSize)
	}
	return errs.ToAggregate()
}

// ValidateSecret checks a Secret as the API server does (name, namespace,
// keys, at most 1 MiB of data).
func ValidateSecret(s *v1.Secret) error {
	errs := validateObjectMeta(s.Name, s.Namespace)
	size := 0
	for k, v := range s.Data {
		errs = append(errs, validateKey(field.NewPath("data").Key(k), k)...)
		size += len(v)
	}
	if size > MaxObjectDataSize {
		// The value is never echoed: it may be secret.
		errs = append(errs, field.TooLong(field.NewPath("data"), "", MaxObjectDataSize))
		errs[len(errs)-1].Detail = fmt.Sprintf("Secret data is %d bytes, over the limit of %d bytes (1 MiB)", size, MaxObjectDataSize)
	}
	return errs.ToAggregate()
}

// immutableMsg is the API server's word for a change of an immutable object.
const immutableMsg = "field is immutable when `immutable` is set"

// ValidateConfigMapUpdate checks cm replacing old as the API server does:
// once old is immutable, immutable stays true and data and binaryData stay
// as they are (deleting the ConfigMap is the way to change it). The error
// reads as the API server's: ConfigMap "name" is invalid: data: Forbidden:
// field is immutable when `immutable` is set.
func ValidateConfigMapUpdate(cm, old *v1.ConfigMap) error {
	var errs field.ErrorList
	if isTrue(old.Immutable) {
		if !isTrue(cm.Immutable) {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableMsg))
		}
		if !sameData(cm.Data, old.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), immutableMsg))
		}
		if !sameData(cm.BinaryData, old.BinaryData) {
			errs = append(errs, field.Forbidden(field.NewPath("binaryData"), immutableMsg))
		}
	}
	return invalid("ConfigMap", cm.Name, errs)
}

// ValidateSecretUpdate checks s replacing old as the API server does: the
// type never changes, and once old is immutable, immutable stays true and
// data stays as it is. The error names fields only, never values.
func ValidateSecretUpdate(s, old *v1.Secret) error {
	var errs field.ErrorList
	if s.Type != old.Type {
		errs = append(errs, field.Invalid(field.NewPath("type"), s.Type, "field is immutable"))
	}
	if isTrue(old.Immutable) {
		if !isTrue(s.Immutable) {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableMsg))
		}
		if !sameData(s.Data, old.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), immutableMsg))
		}
	}
	return invalid("Secret", s.Name, errs)
}

func isTrue(b *bool) bool { return b != nil && *b }

// sameData compares two data maps, nil and empty alike.
func sameData[V string | []byte](a, b map[string]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, va := range a {
		vb, ok := b[k]
		if !ok || string(va) != string(vb) {
			return false
		}
	}
	return true
}

// invalid is the API server's Invalid error for kind/name, nil for no errs.
func invalid(kind, name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(schema.GroupKind{Kind: kind}, name, errs)
}

func validateObjectMeta(name, namespace string) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "name"), ""))
	}
	for _, msg := range utilvalidation.IsDNS1123Subdomain(name) {
		if name != "" {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), name, msg))
		}
	}
	errs = append(errs, invalidEach(field.NewPath("metadata", "namespace"), namespace, utilvalidation.IsDNS1123Label(namespace))...)
	return errs
}

func validateKey(p *field.Path, k string) field.ErrorList {
	return invalidEach(p, k, utilvalidation.IsConfigMapKey(k))
}

// invalidEach is one Invalid error on p for each message a utilvalidation
// check returned about value (none when it passed).
func invalidEach(p *field.Path, value any, msgs []string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range msgs {
		errs = append(errs, field.Invalid(p, value, msg))
	}
	return errs
}
