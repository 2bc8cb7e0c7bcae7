package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/micro"

	"github.com/actorlet/actorlet/messages/wire"
)

// namespaced serves a pod verb on its namespaced subject
// (wire.NamespacedCommandSubject): the bus let the caller publish there
// because its permissions name that namespace, so the request must be
// about a pod of exactly that namespace. A command's body names the pod;
// checking it against the subject is what limits a scoped operator to its
// namespace's pods (its credentials carry no other proof the node could
// check, and a header it sets could be forged).
func namespaced(verb string, h func(context.Context, micro.Request) (any, error)) func(context.Context, micro.Request) (any, error) {
	return func(ctx context.Context, req micro.Request) (any, error) {
		if err := checkNamespace(verb, req.Subject(), req.Data()); err != nil {
			return nil, err
		}
		return h(ctx, req)
	}
}

// checkNamespace compares the namespace token of subject
// (actorlet.node.<node>.ns.<namespace>.<verb>) with the namespace the
// request's body names (empty: "default"; pods.list must name it).
func checkNamespace(verb, subject string, data []byte) error {
	toks := strings.Split(subject, ".")
	if len(toks) < 6 || toks[3] != wire.NamespacedToken {
		return wire.BadRequest("subject", fmt.Sprintf("%q is not a namespaced command subject", subject))
	}
	want := wire.DecodeName(toks[4])
	var body struct {
		Namespace string `json:"namespace"`
	}
	if err := json.Unmarshal(data, &body); err != nil {
		return wire.BadRequest("body", err.Error())
	}
	have := body.Namespace
	if have == "" {
		if verb == wire.VerbPodsList {
			return &wire.Error{Code: wire.CodeForbidden, Description: fmt.Sprintf("forbidden: %s on the subject of namespace %q must name that namespace (an empty one means all namespaces)", verb, want)}
		}
		have = "default"
	}
	if wire.EncodeName(have) != toks[4] {
		return &wire.Error{Code: wire.CodeForbidden, Description: fmt.Sprintf("forbidden: %s of a pod in namespace %q sent on the subject of namespace %q", verb, have, want)}
	}
	return nil
}
