// Package bus is the agent's connection to NATS: the embedded server when no
// URL is given, reconnects with back-off and jitter, reconnect listeners for
// watchers, and Ensure, which creates the protocol's buckets and stream.
// bustest starts real in-process servers for tests.
//
// Its subpackages are the node's endpoints on the bus: publish (pod status
// and node heartbeat), events (the event recorder) and commands (the
// operator command service and ActorNode). The protocol they speak — names,
// keys, payloads, errors — is messages/wire, which actorletctl shares.
package bus
