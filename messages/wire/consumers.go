package wire

import "errors"

// A node reads buckets only through durable pull consumers an operator
// created for it (busauth.NodeConsumers): it is never allowed to create a
// consumer, since a consumer it configured could deliver stored messages to
// any subject. The consumers deliver everything (DeliverAll) without acks;
// a node re-reads the full state by resetting its consumer to sequence 1.

// NodeDesiredConsumer is the durable pull consumer of node on the desired
// bucket's stream, filtered to node.<node>.> and fleet.>.
func NodeDesiredConsumer(node string) string { return "actorlet-node-" + EncodeName(node) }

// NodeStatusConsumer is the durable pull consumer of node on the status
// bucket's stream, filtered to <node>.> (headers only).
func NodeStatusConsumer(node string) string { return "actorlet-status-" + EncodeName(node) }

// NodeObjectConsumer is the durable pull consumer of node on each object
// bucket's stream (ConfigMapsBucket, SecretsBucket), filtered to
// node.<node>.> and fleet.> (ObjectSubjects). Consumer names are per
// stream, so both buckets use the same name.
func NodeObjectConsumer(node string) string { return "actorlet-objects-" + EncodeName(node) }

// BucketStream is the stream JetStream keeps bucket in.
func BucketStream(bucket string) string { return "KV_" + bucket }

// ErrNotProvisioned says a node's consumers are missing and this
// connection may not create them.
var ErrNotProvisioned = errors.New("node not provisioned on the bus (run `actorletctl node add <node>` as an operator)")

// An edge node's buckets and the hub's are copied through stream sources
// that read durable push consumers provisioned for them, so the uplink
// (the leaf connection) only resets a consumer and carries deliveries on
// fixed subjects, and an edge's uplink user is pinned like a node's
// (busauth.EdgeUplinkPermissions, docs/fleet.md):
//
//   - on the hub, EdgeConsumer(node) on the desired, ConfigMap and Secret
//     streams (an operator makes them: actorletctl bootstrap --edge-nodes),
//     delivering on EdgeDownSubject;
//   - on the edge, HubConsumer on its status, nodes and events streams
//     (the edge agent makes them), delivering on EdgeUpSubject.

// EdgeConsumer is the hub's consumer an edge node's copy of a stream
// sources from.
func EdgeConsumer(node string) string { return "actorlet-edge-" + EncodeName(node) }

// HubConsumer is the consumer on an edge node's own streams the hub's
// sources read.
const HubConsumer = "actorlet-hub"

// EdgeSubjectPrefix is where the deliveries between the hub and an edge
// node travel: actorlet.edge.<node>.down.<stream> and
// actorlet.edge.<node>.up.<stream>.
const EdgeSubjectPrefix = "actorlet.edge"

// EdgeDownSubject is where the hub's EdgeConsumer of stream delivers.
func EdgeDownSubject(node, stream string) string {
	return EdgeSubjectPrefix + "." + EncodeName(node) + ".down." + stream
}

// EdgeUpSubject is where an edge's HubConsumer of stream delivers.
func EdgeUpSubject(node, stream string) string {
	return EdgeSubjectPrefix + "." + EncodeName(node) + ".up." + stream
}
