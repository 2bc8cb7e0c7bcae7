// Package busauth is actorlet's trust model on the bus, built on NATS's own
// decentralized JWT authentication (github.com/nats-io/jwt/v2, nkeys):
//
//   - an operator key signs one "actorlet" account (JetStream enabled) and a
//     system account ($SYS, for live JWT updates such as revocations);
//   - the account key signs users: "admin" users (operators, every subject of
//     the account) and one user per node whose permissions allow only that
//     node's own subjects (NodePermissions);
//   - each node reads its desired pods through durable pull consumers that an
//     admin creates for it (NodeConsumers), so a node never needs
//     $JS.API.CONSUMER.CREATE, which would let it deliver stored messages to
//     any subject.
//
// An Authority is the directory holding the keys (mode 0700, files 0600);
// docs/security.md describes the model, its reasons and its limits. This
// package has no nats-server dependency: actorletctl links it.
package busauth
