package busauth

import (
	"context"
	"path/filepath"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/actorlet/actorlet/messages/wire"
)

// EdgeHeartbeat is the idle heartbeat of the consumers a stream source
// reads (nats-server checks a durable source's health by them).
const EdgeHeartbeat = time.Second

// edgeDownStreams are the hub's streams an edge node copies.
var edgeDownStreams = []string{DesiredStream, ConfigMapsStream, SecretsStream}

// edgeUpStreams are an edge node's streams the hub copies.
var edgeUpStreams = []string{StatusStream, NodesStream, wire.EventsStream}

// sourceConsumer is a durable push consumer a stream source reads through
// (StreamSource.Consumer, nats-server 2.14+): it delivers on a fixed
// subject, with flow control acknowledging what was taken.
func sourceConsumer(name, description, deliver string, filters []string) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:        name,
		Description:    description,
		DeliverSubject: deliver,
		FilterSubjects: filters,
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		AckPolicy:      jetstream.AckFlowControlPolicy,
		IdleHeartbeat:  EdgeHeartbeat,
	}
}

// EdgeConsumers are the consumers on the hub an edge node's desired,
// ConfigMap and Secret buckets source: its keys and the fleet's, delivered
// on wire.EdgeDownSubject. An operator creates them (actorletctl
// bootstrap --edge-nodes): the edge's uplink may only reset them.
func EdgeConsumers(node string) map[string]jetstream.ConsumerConfig {
	out := map[string]jetstream.ConsumerConfig{}
	for _, stream := range edgeDownStreams {
		bucket := stream[len("KV_"):]
		out[stream] = sourceConsumer(wire.EdgeConsumer(node), "actorlet edge "+node+": its "+bucket+" keys and the fleet's, for its copy",
			wire.EdgeDownSubject(node, stream), []string{"$KV." + bucket + "." + wire.DesiredNodeWatch(node), "$KV." + bucket + "." + wire.DesiredFleetWatch})
	}
	return out
}

// HubConsumers are the consumers on an edge node's own server the hub's
// sources of its status, heartbeats and events read (the edge agent
// creates them), delivered on wire.EdgeUpSubject.
func HubConsumers(node string) map[string]jetstream.ConsumerConfig {
	n := EncodeToken(node)
	filters := map[string]string{
		StatusStream:      "$KV." + wire.StatusBucket + "." + n + ".>",
		NodesStream:       "$KV." + wire.NodesBucket + "." + n,
		wire.EventsStream: wire.EventSubjectPrefix + "." + n + ".>",
	}
	out := map[string]jetstream.ConsumerConfig{}
	for _, stream := range edgeUpStreams {
		out[stream] = sourceConsumer(wire.HubConsumer, "actorlet hub: node "+node+"'s "+stream, wire.EdgeUpSubject(node, stream), []string{filters[stream]})
	}
	return out
}

// EnsureEdgeConsumers creates (or brings to their settings) the hub's
// consumers of an edge node (EdgeConsumers). The streams must exist.
func EnsureEdgeConsumers(ctx context.Context, js jetstream.JetStream, node string) error {
	return ensureConsumers(ctx, js, EdgeConsumers(node))
}

// EnsureHubConsumers creates an edge node's consumers for the hub
// (HubConsumers) on its own server.
func EnsureHubConsumers(ctx context.Context, js jetstream.JetStream, node string) error {
	return ensureConsumers(ctx, js, HubConsumers(node))
}

// EdgeUplinkPermissions are the permissions of an edge node's uplink user
// to a hub in JetStream domain hubDomain
// on the hub (the leaf connection's user; nats-server reverses them on the
// hub's side: publish is what the edge sends into the hub, subscribe what
// the hub sends to it). Like a node's, they name only the edge's own
// subjects:
//
//   - reset its own EdgeConsumer on each of the hub's three streams, and
//     receive their deliveries (wire.EdgeDownSubject) and flow control;
//   - deliver its status, heartbeats and events only on its own
//     wire.EdgeUpSubject, the hub's sources reset its HubConsumers;
//   - its command endpoints and discovery, status changes and replies, as
//     a node.
//
// No JetStream API of the hub besides those resets: no consumer creation,
// no stream, message or direct get. (The hub's sources still store what
// arrives on the up subjects; wire.EdgePinTransforms keep it among the
// edge's own keys.)
func EdgeUplinkPermissions(node, hubDomain string) jwt.Permissions {
	n := EncodeToken(node)
	var p jwt.Permissions
	for _, stream := range edgeDownStreams {
		p.Pub.Allow.Add(
			"$JS."+hubDomain+".API.CONSUMER.RESET."+stream+"."+wire.EdgeConsumer(node),
			"$JS.FC."+stream+"."+wire.EdgeConsumer(node)+".>",
		)
		p.Sub.Allow.Add(wire.EdgeDownSubject(node, stream))
	}
	p.Pub.Allow.Add(
		wire.EdgeSubjectPrefix+"."+n+".up.>",
		wire.StatusSubjectPrefix+"."+n+".>",
	)
	for _, stream := range edgeUpStreams {
		p.Sub.Allow.Add("$JS.FC." + stream + "." + wire.HubConsumer + ".>")
	}
	p.Pub.Allow.Add(
		"$JSC.R.>",
		// Answers to its commands (and its log chunks): the requesters'
		// inboxes, admins' and scoped operators'. nats-server does not
		// apply allow_responses to what a leaf connection sends, so
		// unlike a node's these are not limited to the requests it got.
		"_INBOX.>",
		OperatorInboxPrefixAll+".>",
	)
	p.Sub.Allow.Add(
		// The edge's own JetStream domain (the hub's sources reset its
		// HubConsumers there; hub operators may manage the edge's own
		// streams).
		"$JS."+wire.EdgeDomain(node)+".API.>",
		// Answers to JetStream API requests across the link, both ways
		// (the internal $JSC.R reply subjects of sources).
		"$JSC.R.>",
	)
	p.Sub.Allow.Add(nodeCommandSubjects(node)...)
	// Acknowledgements of its log chunks, to the edge agent's own inbox.
	p.Sub.Allow.Add(NodeInboxPrefix(node) + ".>")
	p.Resp = &jwt.ResponsePermission{MaxMsgs: -1, Expires: ResponseWindow}
	return p
}

// IssueEdgeUplink signs an edge node's uplink user (EdgeUplinkPermissions),
// records its key with the node's (node revoke cuts both) and returns its
// .creds content.
func (a *Authority) IssueEdgeUplink(node, hubDomain string) ([]byte, error) {
	perms := EdgeUplinkPermissions(node, hubDomain)
	creds, pub, err := a.issueUser("edge-"+node, a.account, &perms)
	if err != nil {
		return nil, err
	}
	if err := recordKey(a.nodeKeysPath(node), pub); err != nil {
		return nil, err
	}
	return creds, nil
}

// EdgeUplinkCredsPath is the default place of an edge node's uplink
// .creds file.
func (a *Authority) EdgeUplinkCredsPath(node string) string {
	return filepath.Join(a.Dir, NodesDir, EncodeToken(node)+".uplink.creds")
}
