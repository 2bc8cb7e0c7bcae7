package busauth

import (
	"time"

	"github.com/nats-io/jwt/v2"

	"github.com/actorlet/actorlet/messages/wire"
)

// EncodeToken is the node name as one subject token (wire.EncodeName).
func EncodeToken(node string) string { return wire.EncodeName(node) }

// ResponseWindow is how long a node may keep answering a request it
// received (allow_responses): every command reply, and the chunks of a log
// follow, go to the request's reply subject within this window.
const ResponseWindow = 24 * time.Hour

// Stream names of the buckets (JetStream keeps bucket X in stream KV_X).
var (
	DesiredStream = wire.BucketStream(wire.DesiredBucket)
	StatusStream  = wire.BucketStream(wire.StatusBucket)
	NodesStream   = wire.BucketStream(wire.NodesBucket)
	// ConfigMaps and Secrets (wire.ConfigMapsBucket, wire.SecretsBucket).
	ConfigMapsStream = wire.BucketStream(wire.ConfigMapsBucket)
	SecretsStream    = wire.BucketStream(wire.SecretsBucket)
)

// NodePermissions is everything a node's user may do, and nothing else:
//
//   - publish its own status, heartbeat, events and finalizing deletions of
//     its own desired keys; read its own keys by direct get;
//   - read its desired pods only through its own two pull consumers
//     (NodeConsumers), and its ConfigMaps and Secrets (its node scope and
//     the fleet scope) only through its own consumer on each object bucket
//     (NodeObjectConsumers): next message, info and reset, never create;
//   - receive its own command requests and the micro discovery requests;
//   - answer only requests it received (allow_responses), including log
//     chunks, which go to the log request's reply subject;
//   - subscribe only to its own inbox prefix (NodeInboxPrefix).
func NodePermissions(node string) jwt.Permissions {
	n := EncodeToken(node)
	desired, status, objects := wire.NodeDesiredConsumer(node), wire.NodeStatusConsumer(node), wire.NodeObjectConsumer(node)
	var p jwt.Permissions
	p.Pub.Allow.Add(
		// Binding to the buckets (jetstream.KeyValue asks for the stream info).
		"$JS.API.STREAM.INFO."+DesiredStream,
		"$JS.API.STREAM.INFO."+StatusStream,
		"$JS.API.STREAM.INFO."+NodesStream,
		"$JS.API.STREAM.INFO."+wire.EventsStream,
		"$JS.API.STREAM.INFO."+ConfigMapsStream,
		"$JS.API.STREAM.INFO."+SecretsStream,
		// Direct gets of its own keys only (the subject form names the key).
		"$JS.API.DIRECT.GET."+DesiredStream+".$KV."+wire.DesiredBucket+".node."+n+".>",
		"$JS.API.DIRECT.GET."+StatusStream+".$KV."+wire.StatusBucket+"."+n+".>",
		"$JS.API.DIRECT.GET."+NodesStream+".$KV."+wire.NodesBucket+"."+n,
		// Writes: its own keys and subjects.
		"$KV."+wire.DesiredBucket+".node."+n+".>", // finalizing graceful deletions
		"$KV."+wire.StatusBucket+"."+n+".>",
		"$KV."+wire.NodesBucket+"."+n,
		wire.StatusSubjectPrefix+"."+n+".>",
		wire.EventSubjectPrefix+"."+n+".>",
	)
	// Its own consumers, never another's; no CREATE/DELETE.
	p.Pub.Allow.Add(consumerUse(DesiredStream, desired)...)
	p.Pub.Allow.Add(consumerUse(StatusStream, status)...)
	p.Pub.Allow.Add(consumerUse(ConfigMapsStream, objects)...)
	p.Pub.Allow.Add(consumerUse(SecretsStream, objects)...)
	p.Sub.Allow.Add(NodeInboxPrefix(node) + ".>")
	p.Sub.Allow.Add(nodeCommandSubjects(node)...)
	p.Resp = &jwt.ResponsePermission{MaxMsgs: -1, Expires: ResponseWindow}
	return p
}

// consumerUse is the JetStream API subjects that use the existing consumer
// of stream (its info, next message and reset), and nothing that creates
// or deletes one.
func consumerUse(stream, consumer string) []string {
	return []string{
		"$JS.API.CONSUMER.INFO." + stream + "." + consumer,
		"$JS.API.CONSUMER.MSG.NEXT." + stream + "." + consumer,
		"$JS.API.CONSUMER.RESET." + stream + "." + consumer,
	}
}

// nodeCommandSubjects are what a node (or an edge node's uplink) receives
// to serve its commands: its own command subjects and nats micro
// discovery ($SRV.PING, $SRV.PING.actorlet-node, $SRV.PING.actorlet-node.<id>,
// and INFO, STATS).
func nodeCommandSubjects(node string) []string {
	return []string{
		wire.CommandSubjectPrefix + "." + EncodeToken(node) + ".>",
		"$SRV.*",
		"$SRV.*." + wire.CommandServiceName,
		"$SRV.*." + wire.CommandServiceName + ".*",
	}
}

// NodeInboxPrefix is the inbox prefix a node's connection uses
// (nats.CustomInboxPrefix); a node may subscribe to nothing else outside its
// own command subjects, so it cannot read replies meant for operators or
// other nodes (which use _INBOX.>).
func NodeInboxPrefix(node string) string { return "_INBOX_NODE." + EncodeToken(node) }
