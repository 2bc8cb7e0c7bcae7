// Package wire is the bus protocol every node and operator shares: the
// JetStream bucket and stream names, subjects and key encoding, the node
// readiness rule, the operator command request/reply types and their errors,
// the typed command Client, and ClientAuth, the one way a client
// authenticates to the bus. docs/protocol.md is the user-facing description
// of what is defined here.
//
// It depends on nats.go, the Kubernetes API types and messages/seconds only
// (never on actors, the CRI or the NATS server), so actorletctl links it
// without the agent. The agent's side of the bus (connection, embedded
// server, publishers, command service) is bus.
//
// Names in keys and subjects: NATS uses '.' as the token separator and
// Kubernetes names (DNS-1123 subdomains) may contain dots but never '_'.
// EncodeName maps '.' to '_', which is reversible for every valid name and
// keeps keys readable.
package wire
