package validation

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidateObjectUpdateImmutable(t *testing.T) {
	yes, no := true, false
	cm := func(immutable *bool, data map[string]string) *v1.ConfigMap {
		return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Immutable: immutable, Data: data}
	}
	for _, tt := range []struct {
		name     string
		new, old *v1.ConfigMap
		want     string
	}{
		{"mutable changes", cm(nil, map[string]string{"a": "2"}), cm(nil, map[string]string{"a": "1"}), ""},
		{"made immutable", cm(&yes, map[string]string{"a": "2"}), cm(&no, map[string]string{"a": "1"}), ""},
		{"immutable, same data", cm(&yes, map[string]string{"a": "1"}), cm(&yes, map[string]string{"a": "1"}), ""},
		{"immutable, nil and empty data alike", cm(&yes, map[string]string{}), cm(&yes, nil), ""},
		{"immutable, new data", cm(&yes, map[string]string{"a": "2"}), cm(&yes, map[string]string{"a": "1"}),
			"ConfigMap \"cfg\" is invalid: data: Forbidden: field is immutable when `immutable` is set"},
		{"immutable, key added", cm(&yes, map[string]string{"a": "1", "b": "1"}), cm(&yes, map[string]string{"a": "1"}), "data: Forbidden"},
		{"immutable turned off", cm(nil, map[string]string{"a": "1"}), cm(&yes, map[string]string{"a": "1"}), "immutable: Forbidden"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateConfigMapUpdate(tt.new, tt.old)
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("ValidateConfigMapUpdate = %v, want %q", err, tt.want)
			}
		})
	}
	bin := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Immutable: &yes, BinaryData: map[string][]byte{"k": {1}}}
	changed := bin.DeepCopy()
	changed.BinaryData["k"] = []byte{2}
	if err := ValidateConfigMapUpdate(changed, bin); err == nil || !strings.Contains(err.Error(), "binaryData: Forbidden") {
		t.Errorf("binaryData change: %v", err)
	}

	secret := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Immutable: &yes, Type: v1.SecretTypeOpaque, Data: map[string][]byte{"password": []byte("hunter2")}}
	next := secret.DeepCopy()
	next.Data["password"] = []byte("letmein")
	err := ValidateSecretUpdate(next, secret)
	if err == nil || !strings.Contains(err.Error(), "Secret \"s\" is invalid: data: Forbidden: field is immutable when `immutable` is set") {
		t.Fatalf("secret data change: %v", err)
	}
	if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "letmein") {
		t.Fatalf("the error shows a secret value: %v", err)
	}
	retyped := secret.DeepCopy()
	retyped.Immutable = nil
	retyped.Type = v1.SecretTypeTLS
	if err := ValidateSecretUpdate(retyped, &v1.Secret{Type: v1.SecretTypeOpaque}); err == nil || !strings.Contains(err.Error(), "type: Invalid value") {
		t.Errorf("type change: %v", err)
	}
	if err := ValidateSecretUpdate(secret.DeepCopy(), secret); err != nil {
		t.Errorf("unchanged immutable secret: %v", err)
	}
}
