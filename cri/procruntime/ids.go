package procruntime

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// newID returns a random 64-hex-digit ID, like containerd's.
func newID() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b)
}

// lookup finds an object by its full ID or a unique prefix of it, as
// crictl users type truncated IDs.
func lookup[T any](m map[string]T, kind, id string) (T, error) {
	var zero T
	if id == "" {
		return zero, status.Errorf(codes.InvalidArgument, "%s ID: must not be empty", kind)
	}
	if v, ok := m[id]; ok {
		return v, nil
	}
	var found []string
	for k := range m {
		if strings.HasPrefix(k, id) {
			found = append(found, k)
		}
	}
	switch len(found) {
	case 0:
		return zero, status.Errorf(codes.NotFound, "%s %q not found", kind, id)
	case 1:
		return m[found[0]], nil
	default:
		return zero, status.Errorf(codes.InvalidArgument, "%s ID %q: prefix matches %d %ss", kind, id, len(found), kind)
	}
}

// reserveName claims a unique name for id, as containerd does for sandboxes
// (per pod attempt) and containers (per sandbox, name and attempt).
func (r *Runtime) reserveName(name, id string) error {
	if owner, ok := r.names[name]; ok && owner != id {
		return status.Errorf(codes.AlreadyExists, "name %q is reserved for %q", name, owner)
	}
	r.names[name] = id
	return nil
}

func sandboxKey(namespace, name, uid string, attempt uint32) string {
	return fmt.Sprintf("k8s_POD_%s_%s_%s_%d", name, namespace, uid, attempt)
}

func containerKey(sandboxID, name string, attempt uint32) string {
	return fmt.Sprintf("%s/%s_%d", sandboxID, name, attempt)
}

// matchLabels reports whether labels carry every key=value of selector.
func matchLabels(labels, selector map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}
