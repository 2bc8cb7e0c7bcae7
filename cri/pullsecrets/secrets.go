package pullsecrets

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// MaxRegistries bounds the registry entries one pull secret may hold.
const MaxRegistries = 256

// DockerConfig is a docker config's registry entries by registry key.
type DockerConfig map[string]Entry

// Entry is one registry's login in a docker config.
type Entry struct {
	Username string
	Password string
}

// entryJSON is an entry as written: "auth" (base64 "user:pass") wins over
// username and password.
type entryJSON struct {
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	Email    string `json:"email,omitempty"`
	Auth     string `json:"auth,omitempty"`
}

// UnmarshalJSON reads an entry, decoding "auth" when present.
func (e *Entry) UnmarshalJSON(data []byte) error {
	var raw entryJSON
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	e.Username, e.Password = raw.Username, raw.Password
	if raw.Auth == "" {
		return nil
	}
	user, pass, err := decodeAuth(raw.Auth)
	if err != nil {
		return err
	}
	e.Username, e.Password = user, pass
	return nil
}

// decodeAuth decodes base64("user:pass"), padded or not.
func decodeAuth(field string) (string, string, error) {
	enc := base64.RawStdEncoding
	if strings.HasSuffix(strings.TrimSpace(field), "=") {
		enc = base64.StdEncoding
	}
	decoded, err := enc.DecodeString(strings.TrimSpace(field))
	if err != nil {
		// The error names the offset only, never the value.
		return "", "", fmt.Errorf("auth: not base64: %w", err)
	}
	user, pass, ok := strings.Cut(string(decoded), ":")
	if !ok {
		return "", "", errors.New("auth: must be base64(username:password)")
	}
	return user, pass, nil
}

// ParseSecret reads a pull secret's registry entries. A Secret of another
// type, or one without its type's key, holds none and is an error, as is
// malformed JSON or an entry whose auth is not base64(user:pass). Errors
// name the Secret's key and the reason, never a value.
func ParseSecret(s *v1.Secret) (DockerConfig, error) {
	var cfg DockerConfig
	switch s.Type {
	case v1.SecretTypeDockerConfigJson:
		data, ok := s.Data[v1.DockerConfigJsonKey]
		if !ok || len(data) == 0 {
			return nil, fmt.Errorf("type %s: key %s missing or empty", s.Type, v1.DockerConfigJsonKey)
		}
		var doc struct {
			Auths DockerConfig `json:"auths"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("%s: %s", v1.DockerConfigJsonKey, jsonReason(err))
		}
		cfg = doc.Auths
	case v1.SecretTypeDockercfg:
		data, ok := s.Data[v1.DockerConfigKey]
		if !ok || len(data) == 0 {
			return nil, fmt.Errorf("type %s: key %s missing or empty", s.Type, v1.DockerConfigKey)
		}
		if err := json.Unmarshal(data, &cfg); err != nil {
			return nil, fmt.Errorf("%s: %s", v1.DockerConfigKey, jsonReason(err))
		}
	default:
		return nil, fmt.Errorf("type %q: a pull secret is of type %s or %s", s.Type, v1.SecretTypeDockerConfigJson, v1.SecretTypeDockercfg)
	}
	if len(cfg) > MaxRegistries {
		return nil, fmt.Errorf("%d registries: limit is %d", len(cfg), MaxRegistries)
	}
	return cfg, nil
}

// jsonReason is a JSON error without the input's bytes: a syntax error
// says where, a type error which field, and a decoding error of ours its
// own (value-free) message.
func jsonReason(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("invalid JSON at offset %d", syn.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("invalid JSON: field %q: want %s", typ.Field, typ.Type)
	case strings.HasPrefix(err.Error(), "auth:"):
		return err.Error()
	}
	return "invalid JSON"
}
