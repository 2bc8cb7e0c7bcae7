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
