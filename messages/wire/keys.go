package wire

import (
	"fmt"
	"strings"
)

// DesiredKey is a parsed DesiredBucket key.
type DesiredKey struct {
	// Fleet is true for fleet.<namespace>.<name> keys; Node is then empty.
	Fleet     bool
	Node      string
	Namespace string
	Name      string
}

// String gives the key back in its bucket form.
func (k DesiredKey) String() string {
	if k.Fleet {
		return DesiredFleetKey(k.Namespace, k.Name)
	}
	return DesiredNodeKey(k.Node, k.Namespace, k.Name)
}

// ParseDesiredKey reads node.<node>.<namespace>.<name> or
// fleet.<namespace>.<name>, decoding each token with DecodeName.
func ParseDesiredKey(key string) (DesiredKey, error) {
	tokens := strings.Split(key, ".")
	for i, tok := range tokens {
		if tok == "" {
			return DesiredKey{}, fmt.Errorf("desired key %q: token %d is empty", key, i)
		}
	}
	switch {
	case tokens[0] == "node" && len(tokens) == 4:
		return DesiredKey{Node: DecodeName(tokens[1]), Namespace: DecodeName(tokens[2]), Name: DecodeName(tokens[3])}, nil
	case tokens[0] == "fleet" && len(tokens) == 3:
		return DesiredKey{Fleet: true, Namespace: DecodeName(tokens[1]), Name: DecodeName(tokens[2])}, nil
	}
	return DesiredKey{}, fmt.Errorf("desired key %q: want node.<node>.<namespace>.<name> or fleet.<namespace>.<name>", key)
}
